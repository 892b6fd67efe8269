//! Multi-lock compatibility with Redisson 4.7.0's RedissonMultiLock, at the protocol level: a
//! Java multi-lock over RLocks and our one-script multi-lock on overlapping names exclude each
//! other, and neither leaves a partial hold behind when it fails.

mod common;
#[path = "../../../core/tests/family/mod.rs"]
mod family;

use common::{answer, cli_hash, cli_keys, world, PROMPT};
use family::Node;
use redlatch::protocol::family::multi::{self, AcquireReply, Member, Plan};
use redlatch::protocol::family::PUBLISH;
use redlatch::protocol::request::Holder;

const OURS: &str = "55555555-5555-4555-8555-555555555555:1";

fn members(names: &[&str]) -> Vec<Member> {
    names
        .iter()
        .map(|n| Member {
            name: (*n).to_owned(),
            holder: Some(Holder::Reentrant {
                owner: OURS.to_owned(),
            }),
        })
        .collect()
}

async fn take(node: &Node, ms: &[Member], req: &str) -> AcquireReply {
    let Plan::OneScript(order) = multi::plan(ms, false).unwrap() else {
        panic!("one node: one script")
    };
    let sorted: Vec<&Member> = order.iter().map(|&i| &ms[i]).collect();
    multi::decode_acquire(
        &node
            .run(&multi::acquire(&sorted, 10_000, req, 2_000).unwrap())
            .await,
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn java_and_redlatch_multi_locks_on_overlapping_names_exclude() {
    let w = world();
    let java = &w.java;
    let node = Node::connect(&w.server.url()).await;
    let ours = members(&["m3", "m2"]);
    // Java takes m1 and m2 (in the order given, as Redisson does).
    assert_eq!(
        answer(java.send("multi", "1 0 10000 m2,m1"), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    assert_eq!(cli_keys(&w.server), ["m1", "m2"]);
    assert!(matches!(
        take(&node, &ours, "r1").await,
        AcquireReply::Busy { index: 0, .. }
    ));
    assert_eq!(
        cli_keys(&w.server),
        ["m1", "m2"],
        "nothing of ours is left behind"
    );
    java.call("multi-unlock", "1 m2,m1").unwrap();
    assert!(cli_keys(&w.server).is_empty());

    // We take m2 and m3: Java's multi-lock over m1, m2 fails and rolls back its m1.
    assert_eq!(take(&node, &ours, "r2").await, AcquireReply::Acquired);
    assert_eq!(cli_hash(&w.server, "m2"), [(OURS.to_owned(), "1".to_owned())]);
    assert_eq!(
        answer(java.send("multi", "1 0 10000 m1,m2"), PROMPT)
            .await
            .unwrap(),
        "false"
    );
    assert_eq!(cli_keys(&w.server), ["m2", "m3"]);
    let sorted: Vec<&Member> = {
        let Plan::OneScript(order) = multi::plan(&ours, false).unwrap() else {
            unreachable!()
        };
        order.into_iter().map(|i| &ours[i]).collect()
    };
    node.run(
        &multi::release(
            &sorted
                .iter()
                .map(|member| multi::Releasing {
                    member,
                    request_id: "rel",
                    latch_ttl_ms: 2_000,
                    sent_before: false,
                })
                .collect::<Vec<_>>(),
            10_000,
            PUBLISH,
        )
        .unwrap(),
    )
    .await;
    assert_eq!(
        answer(java.send("multi", "1 0 10000 m1,m2"), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    java.call("multi-unlock", "1 m1,m2").unwrap();
}
