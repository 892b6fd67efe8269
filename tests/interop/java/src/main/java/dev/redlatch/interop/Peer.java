package dev.redlatch.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;

/**
 * The Java side of redlatch's interop tests: a real Redisson 4.7.0 client driven over
 * stdin/stdout by the Rust tests (tests/interop/src/peer.rs).
 *
 * <p>One command per line, words separated by single spaces: {@code <id> <verb> <args...>}.
 * Every command is answered by exactly one line {@code <id> ok [values...]} or
 * {@code <id> err <ExceptionClass> <message>}, possibly out of order: blocking commands (a lock
 * wait, a latch await) run on Redisson's async API and answer when they complete, while later
 * commands go on. The first line printed is {@code ready}. End of input ends the process, so a
 * test binary that exits (however) never leaves a JVM behind.
 *
 * <p>Owners: Redisson names a lock owner {@code <client uuid>:<thread id>}; every lock command
 * takes the thread id explicitly (Redisson's {@code *Async(..., threadId)} overloads), so one
 * peer plays many owners. The verbs are listed in {@link Commands}.
 */
public final class Peer {
    private static final PrintStream OUT =
            new PrintStream(System.out, true, StandardCharsets.UTF_8);

    private Peer() {
    }

    public static void main(String[] args) throws Exception {
        Commands commands = new Commands();
        OUT.println("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            String[] words = line.trim().split(" ");
            String id = words[0];
            if (words.length < 2) {
                answer(id, null, new IllegalArgumentException("no verb"));
                continue;
            }
            String verb = words[1];
            String[] rest = Arrays.copyOfRange(words, 2, words.length);
            if (verb.equals("quit")) {
                answer(id, "", null);
                break;
            }
            CompletionStage<String> result;
            try {
                result = commands.run(verb, rest);
            } catch (Exception e) {
                result = CompletableFuture.failedFuture(e);
            }
            result.whenComplete((value, error) -> answer(id, value, error));
        }
        // Redisson's Netty threads are not daemons; halt rather than wait for a clean shutdown
        // of every client (the Redis servers belong to the test and are stopped by it).
        OUT.flush();
        Runtime.getRuntime().halt(0);
    }

    private static synchronized void answer(String id, String value, Throwable error) {
        if (error == null) {
            OUT.println(value == null || value.isEmpty() ? id + " ok" : id + " ok " + value);
            return;
        }
        Throwable cause = error;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        String message = String.valueOf(cause.getMessage()).replace('\n', ' ').replace('\r', ' ');
        OUT.println(id + " err " + cause.getClass().getSimpleName() + " " + message);
    }
}
