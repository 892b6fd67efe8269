package dev.redlatch.interop;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The verbs of the peer. {@code C} is a client alias made by {@code connect}; durations are
 * milliseconds; {@code -1} as a wait means "no bound" (Redisson's {@code lock()} /
 * {@code acquire()}), {@code -1} as a lease means "watchdog". {@code KIND} is {@code rlock},
 * {@code fair}, {@code read} or {@code write}.
 *
 * <pre>
 * connect C URL [WATCHDOG_MS]   -> ok UUID          (a new RedissonClient; UUID = its owner prefix)
 * close C                       -> ok
 * lock C KIND NAME TID WAIT LEASE -> ok true|false  (WAIT -1: lock(lease) and true)
 * unlock C KIND NAME TID        -> ok | err IllegalMonitorStateException
 * held C KIND NAME TID          -> ok true|false    (isHeldByThread)
 * force C KIND NAME             -> ok true|false    (forceUnlock)
 * multi C TID WAIT LEASE N1,N2,..  -> ok true|false  (RedissonMultiLock over RLocks, given order)
 * multi-unlock C TID N1,N2,..   -> ok
 * sem-set C NAME N              -> ok true|false    (trySetPermits)
 * sem-acquire C NAME N WAIT     -> ok true|false    (WAIT -1: acquire(n) and true)
 * sem-release C NAME N          -> ok
 * sem-avail C NAME              -> ok N
 * pes-set C NAME N              -> ok true|false
 * pes-acquire C NAME WAIT LEASE -> ok PERMIT_ID | ok none
 * pes-release C NAME ID         -> ok | err IllegalArgumentException
 * pes-avail C NAME              -> ok N
 * pes-lease C NAME ID           -> ok MS (-1: no lease) | err IllegalArgumentException (not held)
 * latch-set C NAME COUNT        -> ok true|false
 * latch-down C NAME             -> ok
 * latch-count C NAME            -> ok N
 * latch-await C NAME TIMEOUT    -> ok true|false
 * keys C                        -> ok KEY...        (every key in the database, sorted)
 * </pre>
 */
final class Commands {
    private final Map<String, RedissonClient> clients = new ConcurrentHashMap<>();

    CompletionStage<String> run(String verb, String[] a) {
        switch (verb) {
            case "connect":
                return connect(a);
            case "close":
                RedissonClient gone = clients.remove(a[0]);
                if (gone != null) {
                    gone.shutdown();
                }
                return done("");
            case "lock":
                return lock(a);
            case "unlock":
                return lockOf(a[0], a[1], a[2]).unlockAsync(tid(a[3])).thenApply(v -> "");
            case "held":
                return lockOf(a[0], a[1], a[2]).isHeldByThreadAsync(tid(a[3])).thenApply(String::valueOf);
            case "force":
                return lockOf(a[0], a[1], a[2]).forceUnlockAsync().thenApply(String::valueOf);
            case "multi":
                return multi(a[0], a[4]).tryLockAsync(ms(a[2]), ms(a[3]), TimeUnit.MILLISECONDS, tid(a[1]))
                        .thenApply(String::valueOf);
            case "multi-unlock":
                return multi(a[0], a[2]).unlockAsync(tid(a[1])).thenApply(v -> "");
            default:
                return family(verb, a);
        }
    }

    private CompletionStage<String> family(String verb, String[] a) {
        switch (verb) {
            case "sem-set":
                return semaphore(a).trySetPermitsAsync(count(a[2])).thenApply(String::valueOf);
            case "sem-acquire":
                if (ms(a[3]) < 0) {
                    return semaphore(a).acquireAsync(count(a[2])).thenApply(v -> "true");
                }
                return semaphore(a).tryAcquireAsync(count(a[2]), ms(a[3]), TimeUnit.MILLISECONDS)
                        .thenApply(String::valueOf);
            case "sem-release":
                return semaphore(a).releaseAsync(count(a[2])).thenApply(v -> "");
            case "sem-avail":
                return semaphore(a).availablePermitsAsync().thenApply(String::valueOf);
            case "pes-set":
                return permits(a).trySetPermitsAsync(count(a[2])).thenApply(String::valueOf);
            case "pes-acquire":
                return permits(a).tryAcquireAsync(ms(a[2]), ms(a[3]), TimeUnit.MILLISECONDS)
                        .thenApply(id -> id == null ? "none" : id);
            case "pes-release":
                return permits(a).releaseAsync(a[2]).thenApply(v -> "");
            case "pes-avail":
                return permits(a).availablePermitsAsync().thenApply(String::valueOf);
            case "pes-lease":
                return permits(a).getLeaseTimeAsync(a[2]).thenApply(String::valueOf);
            case "latch-set":
                return latch(a).trySetCountAsync(ms(a[2])).thenApply(String::valueOf);
            case "latch-down":
                return latch(a).countDownAsync().thenApply(v -> "");
            case "latch-count":
                return latch(a).getCountAsync().thenApply(String::valueOf);
            case "latch-await":
                return latch(a).awaitAsync(ms(a[2]), TimeUnit.MILLISECONDS).thenApply(String::valueOf);
            case "keys":
                TreeSet<String> keys = new TreeSet<>();
                client(a[0]).getKeys().getKeys().forEach(keys::add);
                return done(String.join(" ", keys));
            default:
                throw new IllegalArgumentException("unknown verb " + verb);
        }
    }

    private CompletionStage<String> connect(String[] a) {
        Config config = new Config();
        // Small pools: a test client needs a few connections, and Redisson's defaults (24 idle
        // connections, 32 Netty threads) cost seconds to set up on a loaded 2-core machine.
        config.setNettyThreads(4);
        config.useSingleServer()
                .setAddress(a[1])
                .setConnectionMinimumIdleSize(2)
                .setConnectionPoolSize(16)
                .setSubscriptionConnectionMinimumIdleSize(1)
                .setSubscriptionConnectionPoolSize(8);
        if (a.length > 2) {
            config.setLockWatchdogTimeout(ms(a[2]));
        }
        RedissonClient client = Redisson.create(config);
        RedissonClient old = clients.put(a[0], client);
        if (old != null) {
            old.shutdown();
        }
        return done(client.getId());
    }

    private CompletionStage<String> lock(String[] a) {
        RLock lock = lockOf(a[0], a[1], a[2]);
        long tid = tid(a[3]);
        long wait = ms(a[4]);
        long lease = ms(a[5]);
        if (wait < 0) {
            return lock.lockAsync(lease, TimeUnit.MILLISECONDS, tid).thenApply(v -> "true");
        }
        return lock.tryLockAsync(wait, lease, TimeUnit.MILLISECONDS, tid).thenApply(String::valueOf);
    }

    private RLock lockOf(String alias, String kind, String name) {
        RedissonClient client = client(alias);
        switch (kind) {
            case "rlock":
                return client.getLock(name);
            case "fair":
                return client.getFairLock(name);
            case "read":
                return client.getReadWriteLock(name).readLock();
            case "write":
                return client.getReadWriteLock(name).writeLock();
            default:
                throw new IllegalArgumentException("unknown lock kind " + kind);
        }
    }

    private RLock multi(String alias, String names) {
        RedissonClient client = client(alias);
        List<RLock> locks = new ArrayList<>();
        for (String name : Arrays.asList(names.split(","))) {
            locks.add(client.getLock(name));
        }
        return client.getMultiLock(locks.toArray(new RLock[0]));
    }

    private RSemaphore semaphore(String[] a) {
        return client(a[0]).getSemaphore(a[1]);
    }

    private RPermitExpirableSemaphore permits(String[] a) {
        return client(a[0]).getPermitExpirableSemaphore(a[1]);
    }

    private RCountDownLatch latch(String[] a) {
        return client(a[0]).getCountDownLatch(a[1]);
    }

    private RedissonClient client(String alias) {
        RedissonClient client = clients.get(alias);
        if (client == null) {
            throw new IllegalArgumentException("no client " + alias);
        }
        return client;
    }

    private static CompletionStage<String> done(String value) {
        return CompletableFuture.completedFuture(value);
    }

    private static long tid(String s) {
        return Long.parseLong(s);
    }

    private static long ms(String s) {
        return Long.parseLong(s);
    }

    private static int count(String s) {
        return Integer.parseInt(s);
    }
}
