use super::*;
use crate::navigator::StepRecord;
use crate::vlm::calls::{CallJournal, JournalVlm, RecordedReply, hash_of};
use crate::vlm::{ScriptedVlm, VlmRequest};
use serde_json::json;

fn asked(system: &str, text: &str) -> VlmRequest {
    VlmRequest::new(system).text(text)
}

/// A step log's records of `model` answering `requests` in turn.
async fn journaled(model: ScriptedVlm, requests: &[VlmRequest]) -> Vec<StepRecord> {
    let journal = CallJournal::new();
    let m = JournalVlm::new(Arc::new(model), journal.clone());
    let mut records = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let _ = m.complete(r.clone()).await;
        records.push(StepRecord { step: i as u64 + 1, model_calls: journal.take(), ..StepRecord::default() });
    }
    records
}

#[tokio::test]
async fn identical_requests_are_answered_in_recorded_order_with_recorded_usage() {
    let mut second = VlmResponse::from_text("two");
    second.latency_ms = 1234.0;
    second.usage.prompt_tokens = 900;
    let model = ScriptedVlm::new().then_text("one").then_reply(second.clone()).then_text("three");
    let reqs = [asked("s", "u"), asked("s", "u"), asked("s", "other")];
    let book = ReplayBook::from_step_records("log", &journaled(model, &reqs).await);
    assert_eq!(book.len(), 3);
    let recorded_second = book.calls()[1].reply.clone().unwrap();
    let replay = ReplayVlm::new(book);
    assert_eq!(replay.complete(asked("s", "other")).await.unwrap().text, "three");
    assert_eq!(replay.complete(asked("s", "u")).await.unwrap().text, "one");
    let again = replay.complete(asked("s", "u")).await.unwrap();
    assert_eq!(again, recorded_second, "latency and tokens are the recorded ones");
    assert_eq!((again.text.as_str(), again.usage.prompt_tokens), ("two", second.usage.prompt_tokens));
    assert_eq!(replay.stats(), ReplayStats { requests: 3, replayed: 3, live: 0, unused: 0 });
    assert_eq!(replay.describe().provider, "scripted");
}

#[tokio::test]
async fn a_recorded_error_is_replayed_as_that_error() {
    let model = ScriptedVlm::new().then_error(VlmError::Timeout { after_ms: 8000 });
    let book = ReplayBook::from_step_records("log", &journaled(model, &[asked("s", "u")]).await);
    let replay = ReplayVlm::new(book);
    assert_eq!(replay.complete(asked("s", "u")).await.unwrap_err(), VlmError::Timeout { after_ms: 8000 });
}

#[tokio::test]
async fn a_miss_names_the_kind_the_call_and_the_differing_section() {
    let model = ScriptedVlm::new().then_text("a").then_text("b");
    let reqs = [asked("Find the chair.", "first"), asked("Find the chair.", "second")];
    let replay = ReplayVlm::new(ReplayBook::from_step_records("run.jsonl", &journaled(model, &reqs).await));
    replay.complete(asked("Find the chair.", "first")).await.unwrap();
    let err = replay.complete(asked("Find the sofa.", "second")).await.unwrap_err();
    let VlmError::ReplayMiss { divergence } = &err else { panic!("{err:?}") };
    assert_eq!((divergence.call, divergence.nearest, divergence.kind.as_str()), (2, Some(2), "planner"));
    assert!(divergence.diff[0].contains("differs in: system"), "{:?}", divergence.diff);
    assert!(divergence.diff.iter().any(|l| l == "+ system: Find the sofa."), "{:?}", divergence.diff);
    // the run stays off the recording: later requests fail the same way
    let later = replay.complete(asked("Find the chair.", "second")).await.unwrap_err();
    assert_eq!(later, err);
    assert_eq!(err.link_fault(), Some(crate::vlm::LinkFault::ReplayMiss));
}

#[tokio::test]
async fn a_full_recording_shows_the_recorded_and_the_new_line() {
    let req = asked("Find the chair.\nBe brief.", "where?");
    let msg = json!({
        "call": 1, "backend": {"provider": "openai", "model": "m"}, "kind": "planner",
        "request_hash": request_hash("m", &req), "request": canonical_request(&req),
        "reply": RecordedReply::of(Ok(&VlmResponse::from_text("left"))),
    });
    let book = ReplayBook::from_call_messages("run.mcap", [msg.clone()]).unwrap();
    let replay = ReplayVlm::new(book.clone());
    let err = replay.complete(asked("Find the sofa.\nBe brief.", "where?")).await.unwrap_err();
    let VlmError::ReplayMiss { divergence } = err else { panic!() };
    assert_eq!(divergence.diff[0], "- system: Find the chair.");
    assert!(divergence.diff.contains(&"+ system: Find the sofa.".to_string()), "{:?}", divergence.diff);
    assert!(divergence.to_string().contains("run.mcap"));
    // and the recorded request is answered
    assert_eq!(ReplayVlm::new(book).complete(req).await.unwrap().text, "left");
    // an altered file is refused
    let mut altered = msg;
    altered["request"]["system"] = json!("Find the lamp.");
    let e = ReplayBook::from_call_messages("run.mcap", [altered]).unwrap_err();
    assert!(e.to_string().contains("model call 1") && e.to_string().contains("altered"), "{e}");
}

#[tokio::test]
async fn with_a_live_model_the_miss_and_the_rest_go_live() {
    let model = ScriptedVlm::new().then_text("a").then_text("b");
    let reqs = [asked("s", "1"), asked("s", "2")];
    let book = ReplayBook::from_step_records("log", &journaled(model, &reqs).await);
    let live = Arc::new(ScriptedVlm::new().then_text("live 1").then_text("live 2"));
    let replay = ReplayVlm::new(book).with_live(live);
    assert_eq!(replay.complete(asked("s", "1")).await.unwrap().text, "a");
    assert_eq!(replay.complete(asked("s", "changed")).await.unwrap().text, "live 1");
    // recorded, but after the divergence: live too
    assert_eq!(replay.complete(asked("s", "2")).await.unwrap().text, "live 2");
    assert_eq!(replay.stats(), ReplayStats { requests: 3, replayed: 1, live: 2, unused: 1 });
    assert!(replay.divergence().is_some());
}

#[tokio::test]
async fn the_step_log_line_round_trips_the_calls() {
    let records = journaled(ScriptedVlm::new().then_text("x"), &[asked("s", "u")]).await;
    let line = serde_json::to_string(&records[0]).unwrap();
    assert!(line.contains("\"model_calls\":[{\"kind\":\"planner\""), "{line}");
    let back: StepRecord = serde_json::from_str(&line).unwrap();
    assert_eq!(back, records[0]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Whatever a recorded model-call message holds, reading it is a book
    /// or an error naming the call, never a panic; a book answers or
    /// reports a divergence.
    #[test]
    fn any_recorded_message_is_a_call_or_an_error(
        provider in ".{0,12}", model in ".{0,12}", kind in ".{0,12}", system in ".{0,40}",
        hash in "[0-9a-f]{0,64}", ok in proptest::bool::ANY, text in ".{0,40}", keep_hash in proptest::bool::ANY,
    ) {
        let request = json!({"system": system, "user": [{"type": "text", "text": text}], "turns": []});
        let hash = if keep_hash { hash_of(&model, &kind, &request) } else { hash };
        let reply = if ok { json!({"ok": true, "response": {"text": text, "tool_calls": [], "usage": {},
            "latency_ms": 1.0, "model": model, "finish_reason": null, "refusal": null, "cost_usd": null, "attempts": 1}}) }
            else { json!({"ok": false, "error": text}) };
        let msg = json!({"backend": {"provider": provider, "model": model}, "kind": kind,
                         "request_hash": hash, "request": request, "reply": reply});
        match ReplayBook::from_call_messages("p.mcap", [msg]) {
            Ok(book) => {
                let replay = ReplayVlm::new(book);
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                let _ = rt.block_on(replay.complete(VlmRequest::new(system).text(text)));
            }
            Err(e) => proptest::prop_assert!(e.to_string().contains("model call 1"), "{}", e),
        }
    }
}
