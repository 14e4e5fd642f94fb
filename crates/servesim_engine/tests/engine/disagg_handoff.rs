//! The hand-off of disaggregated serving, engine side (vLLM core), as the reference does it:
//! a prefill worker holds a finished prompt's KV until released; a decode worker reserves
//! blocks before the transfer and admits reservations in their order once their KV arrives.

use serde_json::json;
use servesim_engine::{Engine, EngineArgs, HandOff, Outcome, RankSetup, Request, Reservation, Scheduler};

fn engine(args: serde_json::Value) -> Engine {
    Engine::new(&EngineArgs::from_json(&args).unwrap().resolve().unwrap(), &RankSetup::single(true)).unwrap()
}

fn req(id: u64, len: u32, out: u32) -> Request {
    Request { id, prompt: (0..len).map(|t| (id as u32) * 100_000 + t).collect::<Vec<_>>().into(), max_output: out }
}

fn shared(id: u64, len: u32, out: u32) -> Request {
    Request { id, prompt: (0..len).collect::<Vec<_>>().into(), max_output: out }
}

/// The requests one pass admitted, in order.
fn admitted(e: &mut Engine) -> Vec<u64> {
    e.step().admissions.iter().map(|a| a.id).collect()
}

/// Steps until nothing is left to do, then checks that every request finished and the
/// bookkeeping balances.
fn run_to_the_end(e: &mut Engine) {
    while e.has_work() {
        e.step();
    }
    assert_eq!(e.in_flight(), 0, "every request finishes");
    e.check().unwrap();
}

#[test]
fn a_prefill_worker_holds_a_finished_prompt_until_released() {
    let mut e = engine(json!({"worker_type": "prefill", "block_size": 4, "num_gpu_blocks": 6}));
    e.submit(req(1, 16, 1));
    let out = e.step();
    assert_eq!(out.finished.iter().map(|f| (f.id, f.outcome.clone())).collect::<Vec<_>>(), vec![(1, Outcome::Completed)]);
    assert_eq!(e.metrics().active_decode_blocks, 4, "the finished prompt's 4 blocks stay held");
    e.check().unwrap();

    // 12 tokens need 3 blocks; 2 are free: the request waits (it is not unschedulable).
    e.submit(req(2, 12, 1));
    let out = e.step();
    assert!(out.finished.is_empty() && out.admissions.is_empty());
    assert!(!e.has_work() && e.stalled(), "nothing can run until a release");

    e.release_source(1);
    assert!(e.has_work());
    let out = e.step();
    assert_eq!(out.admissions.len(), 1);
    assert_eq!(out.finished[0].id, 2);
    e.release_source(2);
    assert_eq!(e.metrics().active_decode_blocks, 0);
    e.check().unwrap();
}

#[test]
fn held_blocks_serve_prefix_hits() {
    let mut e = engine(json!({"worker_type": "prefill", "block_size": 4, "num_gpu_blocks": 20}));
    e.submit(shared(1, 16, 1));
    e.step();
    e.submit(shared(2, 16, 1));
    let out = e.step();
    assert_eq!(out.admissions[0].reused_tokens, 12, "3 held blocks reused; the last is recomputed");
}

#[test]
fn a_reservation_needs_room_and_a_running_slot() {
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 8, "max_num_seqs": 1}));
    assert_eq!(e.reserve_destination(req(1, 16, 3)), Reservation::Reserved { resident_blocks: 0 });
    assert_eq!(e.reserve_destination(req(2, 20, 3)), Reservation::NoRoom, "4 blocks free, 5 needed");
    assert_eq!(e.reserve_destination(req(3, 40, 3)), Reservation::NeverFits);
    assert!(!e.has_work(), "a reservation waits for its KV");
    assert!(e.activate(1));
    let out = e.step();
    assert_eq!(out.tokens, vec![1], "the transferred prompt decodes at once");
    // One request runs and max_num_seqs is 1: no reservation, even with room.
    assert_eq!(e.reserve_destination(req(4, 4, 3)), Reservation::NoRoom);
    e.check().unwrap();
}

#[test]
fn reservations_are_admitted_in_reservation_order_once_their_kv_arrives() {
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 64, "max_num_seqs": 1}));
    assert!(matches!(e.reserve_destination(req(1, 8, 2)), Reservation::Reserved { .. }));
    assert!(matches!(e.reserve_destination(req(2, 8, 3)), Reservation::Reserved { .. }));
    // The second transfer lands first, and runs: the first is passed over, not waited for.
    assert!(e.activate(2));
    assert_eq!(e.step().tokens, vec![2]);
    assert!(e.activate(1));
    assert_eq!(e.step().tokens, vec![2], "one slot: request 2 keeps it");
    let out = e.step();
    assert_eq!(out.finished.iter().map(|f| f.id).collect::<Vec<_>>(), vec![2]);
    assert_eq!(e.step().tokens, vec![1]);
    e.check().unwrap();
}

#[test]
fn transferred_blocks_become_reusable_when_their_kv_arrives() {
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 64}));
    assert_eq!(e.reserve_destination(shared(1, 16, 50)), Reservation::Reserved { resident_blocks: 0 });
    assert_eq!(
        e.reserve_destination(shared(2, 16, 5)),
        Reservation::Reserved { resident_blocks: 0 },
        "request 1's blocks are still in transfer"
    );
    e.activate(1);
    assert_eq!(e.reserve_destination(shared(3, 16, 5)), Reservation::Reserved { resident_blocks: 4 });
    e.check().unwrap();
}

/// A decode rank (4-token blocks, `blocks` of them) running requests 1 and 2 (8-token
/// prompts) with request 3 reserved, where request 2 was preempted and request 3's KV has
/// arrived: the queue is [2 (needs 3 blocks), 3 (in place)].
fn preempted_head_and_transferred_follower(blocks: u32) -> Engine {
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": blocks}));
    for id in [1, 2] {
        assert!(matches!(e.reserve_destination(req(id, 8, 20)), Reservation::Reserved { .. }));
        assert!(e.activate(id));
    }
    assert_eq!(e.step().tokens, vec![1, 2]);
    assert!(matches!(e.reserve_destination(req(3, 8, 5)), Reservation::Reserved { .. }));
    // Both now need a third block; only one is free: request 2, last in, preempts itself.
    assert_eq!(e.step().preempted, vec![2]);
    assert!(e.activate(3));
    e
}

#[test]
fn while_reservations_wait_only_transferred_requests_join() {
    let mut e = preempted_head_and_transferred_follower(7);
    // Nobody waits for a reservation: the queue is FIFO and its head does not fit.
    e.set_destinations_pending(false);
    assert!(e.step().admissions.is_empty(), "request 3 waits behind request 2");
    // A prompt waits for room here: request 3, whose blocks are in place, joins past the
    // head; request 2 would take room the reservation waits for.
    e.set_destinations_pending(true);
    assert_eq!(admitted(&mut e), vec![3]);
    e.check().unwrap();
}

/// A decode rank (4-token blocks, 5 of them) where request 2 (a 4-token prompt) ran and
/// preempted itself for want of the blocks request 1 (16 tokens) holds, and request 1's KV
/// has then arrived; request 1 is reserved first if `one_first`.
fn preempted_and_transferred(one_first: bool) -> Engine {
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 5}));
    let (one, two) = (req(1, 16, 3), req(2, 4, 10));
    for r in if one_first { [one, two] } else { [two, one] } {
        assert!(matches!(e.reserve_destination(r), Reservation::Reserved { .. }));
    }
    assert!(e.activate(2));
    assert_eq!(e.step().tokens, vec![2]);
    assert_eq!(e.step().preempted, vec![2], "its second block is request 1's");
    assert!(e.activate(1));
    e
}

#[test]
fn a_transferred_request_takes_its_reservation_place_ahead_of_a_later_preempted_one() {
    // Preemption put request 2 at the front; request 1, reserved before it, goes back ahead
    // of it when its KV arrives, and joins although request 2 cannot fit.
    let mut e = preempted_and_transferred(true);
    assert_eq!(admitted(&mut e), vec![1]);
    run_to_the_end(&mut e);
}

#[test]
fn with_nothing_running_a_transferred_request_waits_behind_a_blocked_head() {
    // Request 2 (preempted) cannot fit and nothing runs; request 1, reserved after it, holds
    // the blocks request 2 needs but waits behind it, as in the reference, until a prompt
    // waits for a reservation here.
    let mut e = preempted_and_transferred(false);
    let out = e.step();
    assert!(out.admissions.is_empty() && out.finished.is_empty(), "both wait; neither is unschedulable");
    assert!(e.stalled());
    e.set_destinations_pending(true);
    assert_eq!(admitted(&mut e), vec![1]);
    e.set_destinations_pending(false);
    run_to_the_end(&mut e);
}

#[test]
fn an_sglang_prefill_worker_holds_its_pages_until_released() {
    let mut e = engine(json!({"backend": "sglang", "worker_type": "prefill", "block_size": 4, "num_gpu_blocks": 6}));
    e.submit(req(1, 16, 1));
    assert_eq!(e.step().finished[0].id, 1);
    assert_eq!(e.metrics().active_decode_blocks, 4, "the prompt's 4 pages stay held");
    e.submit(req(2, 12, 1));
    let out = e.step();
    assert!(out.finished.is_empty() && out.admissions.is_empty());
    assert!(e.stalled(), "room comes back only with the release");
    e.release_source(1);
    assert!(e.has_work());
    assert_eq!(e.step().finished[0].id, 2);
    e.check().unwrap();
}

#[test]
fn an_sglang_decode_worker_reserves_pages_and_decodes_from_activation() {
    let mut e = engine(json!({"backend": "sglang", "worker_type": "decode", "block_size": 4, "num_gpu_blocks": 8}));
    assert_eq!(e.reserve_destination(shared(1, 16, 3)), Reservation::Reserved { resident_blocks: 0 });
    assert_eq!(e.reserve_destination(req(2, 20, 3)), Reservation::NoRoom, "4 pages free, 5 needed");
    assert_eq!(e.reserve_destination(req(3, 40, 3)), Reservation::NeverFits);
    assert!(!e.has_work());
    assert!(e.activate(1));
    let out = e.step();
    assert_eq!(out.tokens, vec![1], "its first decode pass emits its first token");
    // Joining the batch is an admission, so a later retraction's re-admission counts as one.
    assert_eq!(out.admissions.iter().map(|a| (a.id, a.readmission)).collect::<Vec<_>>(), vec![(1, false)]);
    // Its prompt pages are cached now: a request with the same prompt shares them.
    assert_eq!(e.reserve_destination(shared(4, 16, 3)), Reservation::Reserved { resident_blocks: 4 });
    e.check().unwrap();
}
