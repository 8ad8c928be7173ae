//! Test doubles for [`VisionLanguageModel`]: [`ScriptedVlm`] and [`FnVlm`].

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{BackendInfo, DEFAULT_TIMEOUT, RawToolCall, VisionLanguageModel, VlmError, VlmRequest, VlmResponse};

/// One scripted outcome of a [`ScriptedVlm`] call.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptStep {
    /// Answer with this response.
    Reply(VlmResponse),
    /// Fail with this error.
    Error(VlmError),
    /// Sleep until the request's deadline, then fail with
    /// [`VlmError::Timeout`].
    Timeout,
    /// This call and every later one times out (the provider went silent).
    Silence,
    /// Wait, then perform the inner step. A delay at or beyond the request's
    /// deadline becomes a timeout at the deadline, as a real backend's would.
    Delayed {
        /// How long to wait.
        delay: Duration,
        /// What happens after the wait.
        step: Box<ScriptStep>,
    },
}

/// What a [`ScriptedVlm`] does once its script is used up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WhenExhausted {
    Fail,
    RepeatLast,
}

#[derive(Debug)]
struct Script {
    steps: VecDeque<ScriptStep>,
    requests: Vec<VlmRequest>,
    silent: bool,
    exhausted: WhenExhausted,
    last: Option<ScriptStep>,
    next_call_id: u64,
}

/// A model that answers from a queue of scripted steps, in order, and
/// records every request it receives. It validates requests like a real
/// backend (an incoherent request fails with [`VlmError::Config`]) and
/// honours their timeouts; with tokio's paused clock
/// (`#[tokio::test(start_paused = true)]`) timeouts cost no real time.
///
/// Tool calls scripted without ids get unique `call_N` ids, so the explore
/// protocol's tool results can refer to them.
///
/// ```
/// use serde_json::json;
/// use nav_planner::vlm::{ScriptedVlm, VisionLanguageModel, VlmError, VlmRequest};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build()?.block_on(async {
/// let vlm = ScriptedVlm::new()
///     .then_tool_call("rotate", json!({"degrees": 90}))
///     .then_error(VlmError::Http { status: 500, message: "boom".into() })
///     .then_silence();
/// let req = || VlmRequest::new("sys").text("go");
/// assert_eq!(vlm.complete(req()).await?.tool_calls[0].name, "rotate");
/// assert!(matches!(vlm.complete(req()).await, Err(VlmError::Http { status: 500, .. })));
/// assert!(matches!(vlm.complete(req()).await, Err(VlmError::Timeout { after_ms: 8000 })));
/// assert!(matches!(vlm.complete(req()).await, Err(VlmError::Timeout { .. }))); // still silent
/// assert_eq!(vlm.calls(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ScriptedVlm {
    script: Mutex<Script>,
    info: BackendInfo,
}

impl Default for ScriptedVlm {
    fn default() -> Self {
        Self::new()
    }
}

impl ScriptedVlm {
    /// An empty script: every call fails with [`VlmError::Config`] naming
    /// the exhausted script until steps are added.
    pub fn new() -> Self {
        Self {
            script: Mutex::new(Script {
                steps: VecDeque::new(),
                requests: Vec::new(),
                silent: false,
                exhausted: WhenExhausted::Fail,
                last: None,
                next_call_id: 0,
            }),
            info: BackendInfo::new("scripted", "scripted"),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the model id reported by [`VisionLanguageModel::describe`] and in
    /// replies.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.info.model = model.into();
        self
    }

    /// Once the script is used up, repeat the last step forever instead of
    /// failing.
    pub fn repeat_last(self) -> Self {
        self.lock().exhausted = WhenExhausted::RepeatLast;
        self
    }

    /// Appends a step (builder form).
    pub fn then(self, step: ScriptStep) -> Self {
        self.push(step);
        self
    }

    /// Appends a text reply.
    pub fn then_text(self, text: impl Into<String>) -> Self {
        self.then(ScriptStep::Reply(VlmResponse::from_text(text)))
    }

    /// Appends a reply whose text is this JSON value, serialized.
    pub fn then_json(self, value: serde_json::Value) -> Self {
        self.then_text(value.to_string())
    }

    /// Appends a reply with one tool call (id assigned when served).
    pub fn then_tool_call(self, name: impl Into<String>, arguments: serde_json::Value) -> Self {
        self.then_tool_calls(vec![RawToolCall::new("", name, arguments)])
    }

    /// Appends a reply with several tool calls; empty ids are filled in.
    pub fn then_tool_calls(self, calls: Vec<RawToolCall>) -> Self {
        self.then(ScriptStep::Reply(VlmResponse::from_tool_calls(calls)))
    }

    /// Appends a full response.
    pub fn then_reply(self, reply: VlmResponse) -> Self {
        self.then(ScriptStep::Reply(reply))
    }

    /// Appends a failure.
    pub fn then_error(self, error: VlmError) -> Self {
        self.then(ScriptStep::Error(error))
    }

    /// Appends a call that times out at the request's deadline.
    pub fn then_timeout(self) -> Self {
        self.then(ScriptStep::Timeout)
    }

    /// From this point on, every call times out.
    pub fn then_silence(self) -> Self {
        self.then(ScriptStep::Silence)
    }

    /// Appends a reply that arrives after `delay` (or a timeout if the delay
    /// reaches the deadline).
    pub fn then_delayed(self, delay: Duration, step: ScriptStep) -> Self {
        self.then(ScriptStep::Delayed { delay, step: Box::new(step) })
    }

    /// Appends a step to a model already shared (e.g. behind an `Arc`).
    pub fn push(&self, step: ScriptStep) {
        self.lock().steps.push_back(step);
    }

    /// Every request received so far, in order (invalid ones included).
    pub fn requests(&self) -> Vec<VlmRequest> {
        self.lock().requests.clone()
    }

    /// The most recent request.
    pub fn last_request(&self) -> Option<VlmRequest> {
        self.lock().requests.last().cloned()
    }

    /// Number of calls received.
    pub fn calls(&self) -> usize {
        self.lock().requests.len()
    }

    /// Number of scripted steps not yet served.
    pub fn remaining(&self) -> usize {
        self.lock().steps.len()
    }

    /// Records the request and picks its step, under the lock.
    fn next_step(&self, req: &VlmRequest) -> Result<ScriptStep, VlmError> {
        let mut s = self.lock();
        s.requests.push(req.clone());
        req.validate()?;
        if s.silent {
            return Ok(ScriptStep::Timeout);
        }
        let step = match s.steps.pop_front() {
            Some(step) => step,
            None => match (&s.exhausted, &s.last) {
                (WhenExhausted::RepeatLast, Some(last)) => last.clone(),
                _ => {
                    return Err(VlmError::Config {
                        message: format!(
                            "ScriptedVlm script exhausted: call {} has no scripted step",
                            s.requests.len()
                        ),
                    });
                }
            },
        };
        if step == ScriptStep::Silence {
            s.silent = true;
        }
        s.last = Some(step.clone());
        let step = match step {
            ScriptStep::Reply(reply) => ScriptStep::Reply(assign_ids(reply, &mut s.next_call_id)),
            other => other,
        };
        Ok(step)
    }
}

fn assign_ids(mut reply: VlmResponse, next: &mut u64) -> VlmResponse {
    for call in &mut reply.tool_calls {
        if call.id.is_empty() {
            call.id = format!("call_{next}");
            *next += 1;
        }
    }
    reply
}

fn timeout_error(deadline: Duration) -> VlmError {
    VlmError::Timeout { after_ms: u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX) }
}

#[async_trait]
impl VisionLanguageModel for ScriptedVlm {
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let start = Instant::now();
        let deadline = req.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let mut step = self.next_step(&req)?;
        let mut waited = Duration::ZERO;
        loop {
            match step {
                ScriptStep::Reply(mut reply) => {
                    reply.latency_ms = start.elapsed().as_secs_f64() * 1e3;
                    if reply.model.is_empty() {
                        reply.model = self.info.model.clone();
                    }
                    reply.attempts = reply.attempts.max(1);
                    return Ok(reply);
                }
                ScriptStep::Error(e) => return Err(e),
                ScriptStep::Timeout | ScriptStep::Silence => {
                    tokio::time::sleep(deadline.saturating_sub(waited)).await;
                    return Err(timeout_error(deadline));
                }
                ScriptStep::Delayed { delay, step: inner } => {
                    if waited + delay >= deadline {
                        tokio::time::sleep(deadline.saturating_sub(waited)).await;
                        return Err(timeout_error(deadline));
                    }
                    tokio::time::sleep(delay).await;
                    waited += delay;
                    step = *inner;
                }
            }
        }
    }

    fn describe(&self) -> BackendInfo {
        self.info.clone()
    }
}

/// A model made from a closure: handy when the reply depends on the request
/// (e.g. a test that answers with the candidate named in the prompt).
///
/// ```
/// use nav_planner::vlm::{FnVlm, Part, VisionLanguageModel, VlmRequest, VlmResponse};
///
/// let echo = FnVlm::new(|req: &VlmRequest| {
///     let n = req.image_count();
///     Ok(VlmResponse::from_text(format!("saw {n} images")))
/// });
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let reply = echo.complete(VlmRequest::new("s").text("hi")).await?;
/// assert_eq!(reply.text, "saw 0 images");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FnVlm<F> {
    f: F,
    info: BackendInfo,
}

impl<F> FnVlm<F>
where
    F: Fn(&VlmRequest) -> Result<VlmResponse, VlmError> + Send + Sync,
{
    /// Wraps the closure; `describe` reports provider `fn`.
    pub fn new(f: F) -> Self {
        Self { f, info: BackendInfo::new("fn", "fn") }
    }

    /// Sets the reported model id.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.info.model = model.into();
        self
    }
}

impl<F> std::fmt::Debug for FnVlm<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnVlm").field("info", &self.info).finish_non_exhaustive()
    }
}

#[async_trait]
impl<F> VisionLanguageModel for FnVlm<F>
where
    F: Fn(&VlmRequest) -> Result<VlmResponse, VlmError> + Send + Sync,
{
    async fn complete(&self, req: VlmRequest) -> Result<VlmResponse, VlmError> {
        let start = Instant::now();
        req.validate()?;
        let mut reply = (self.f)(&req)?;
        reply.latency_ms = start.elapsed().as_secs_f64() * 1e3;
        if reply.model.is_empty() {
            reply.model = self.info.model.clone();
        }
        reply.attempts = reply.attempts.max(1);
        Ok(reply)
    }

    fn describe(&self) -> BackendInfo {
        self.info.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vlm::{ToolChoice, ToolSpec, Turn};
    use serde_json::json;

    fn req() -> VlmRequest {
        VlmRequest::new("sys").text("go").timeout(Duration::from_millis(500))
    }

    #[tokio::test(start_paused = true)]
    async fn replies_in_order_and_records_requests() {
        let vlm = ScriptedVlm::new()
            .with_model("fake-1")
            .then_text("one")
            .then_tool_calls(vec![RawToolCall::new("", "a", json!({})), RawToolCall::new("keep", "b", json!({"x": 1}))])
            .then_tool_call("c", json!({}));
        assert_eq!(vlm.remaining(), 3);
        let r1 = vlm.complete(req().text("first")).await.unwrap();
        assert_eq!((r1.text.as_str(), r1.model.as_str(), r1.attempts), ("one", "fake-1", 1));
        let r2 = vlm.complete(req()).await.unwrap();
        let ids: Vec<_> = r2.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_0", "keep"]);
        let r3 = vlm.complete(req()).await.unwrap();
        assert_eq!(r3.tool_calls[0].id, "call_1");
        assert_eq!(vlm.calls(), 3);
        assert_eq!(vlm.requests()[0].user.len(), 2);
        let err = vlm.complete(req()).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid VLM configuration or request: ScriptedVlm script exhausted: call 4 has no scripted step"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn timeouts_wait_for_the_deadline() {
        let vlm = ScriptedVlm::new()
            .then_timeout()
            .then_delayed(Duration::from_millis(100), ScriptStep::Reply(VlmResponse::from_text("late but ok")))
            .then_delayed(Duration::from_secs(5), ScriptStep::Reply(VlmResponse::from_text("too late")));
        let t0 = tokio::time::Instant::now();
        assert_eq!(vlm.complete(req()).await, Err(VlmError::Timeout { after_ms: 500 }));
        assert_eq!(t0.elapsed(), Duration::from_millis(500));
        assert_eq!(vlm.complete(req()).await.unwrap().text, "late but ok");
        let t1 = tokio::time::Instant::now();
        assert_eq!(vlm.complete(req()).await, Err(VlmError::Timeout { after_ms: 500 }));
        assert_eq!(t1.elapsed(), Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn silence_is_forever_and_repeat_last_repeats() {
        let silent = ScriptedVlm::new().then_silence().then_text("never served");
        for _ in 0..3 {
            assert!(matches!(silent.complete(req()).await, Err(VlmError::Timeout { .. })));
        }
        assert_eq!(silent.remaining(), 1);
        let repeat = ScriptedVlm::new().then_text("same").repeat_last();
        for _ in 0..3 {
            assert_eq!(repeat.complete(req()).await.unwrap().text, "same");
        }
    }

    #[tokio::test]
    async fn invalid_requests_are_rejected_and_recorded() {
        let vlm = ScriptedVlm::new().then_text("unused");
        let bad = req().tool_choice(ToolChoice::Required);
        assert!(matches!(vlm.complete(bad).await, Err(VlmError::Config { .. })));
        assert_eq!((vlm.calls(), vlm.remaining()), (1, 1));
        // A valid explore-style follow-up passes.
        let tool = ToolSpec::new("observe_scene", "look", json!({"type": "object", "properties": {}}));
        let follow = req()
            .tools(vec![tool])
            .turn(Turn::Assistant {
                text: None,
                tool_calls: vec![RawToolCall::new("call_0", "observe_scene", json!({}))],
            })
            .turn(Turn::ToolResult { call_id: "call_0".into(), name: "observe_scene".into(), content: "{}".into() });
        assert_eq!(vlm.complete(follow).await.unwrap().text, "unused");
    }

    #[tokio::test]
    async fn fn_vlm_sees_the_request() {
        let vlm = FnVlm::new(|r: &VlmRequest| Ok(VlmResponse::from_text(r.system.clone()))).with_model("echo");
        let reply = vlm.complete(req()).await.unwrap();
        assert_eq!((reply.text.as_str(), reply.model.as_str()), ("sys", "echo"));
        assert!(matches!(vlm.complete(VlmRequest::new("s")).await, Err(VlmError::Config { .. })));
    }
}
