//! # nav-planner
//!
//! The deliberative layer of navkit: a vision-language model decides *where
//! to go*; this crate asks it, safely and cheaply. Three layers, each a
//! folder, each importing only the ones above it in this list:
//!
//! 1. [`vlm`] — talking to a model: the [`VisionLanguageModel`] trait (one
//!    async method, `complete(VlmRequest) -> Result<VlmResponse, VlmError>`),
//!    its test doubles [`ScriptedVlm`] and [`FnVlm`], the [`MeteredVlm`]
//!    statistics wrapper, the providers' JSON codecs ([`vlm::wire`]), prices
//!    ([`PriceTable`]), and the HTTP backends behind cargo features:
//!    `openai` (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server; **on by
//!    default**), `gemini` (Google AI and Vertex AI) and `anthropic`.
//!    [`build_backend`] builds one from a serde [`BackendConfig`]. Imports
//!    nothing else from this crate.
//! 2. [`protocol`] — what the model sees and says: per protocol
//!    (objectnav, explore, candidates) the prompts, images
//!    ([`protocol::annotate`]), output schemas, parsers ([`protocol::json`]
//!    recovers JSON from messy replies), validators, retries and fallbacks;
//!    the scene analyzer and grounding generation. [`offline`] holds the
//!    planners that stand in for a model (no network) behind the same
//!    protocol traits.
//! 3. [`navigator`] — running them: the three loops over a HAL, the
//!    low-level policy, the step log, episodes in the built-in simulator,
//!    evaluation suites and (feature `sim-bridge`) episodes through the
//!    simulator bridge.
//! 4. [`replay`] — re-running a recorded run for free and exactly:
//!    [`replay::ReplayVlm`] answers each request with the reply a recording
//!    (an MCAP file or a step log) holds for the same request, and names
//!    the first request that is not there. The request hashes, the recorded
//!    replies and the journal a step log writes live in [`vlm::calls`].
//!
//! ```
//! use std::time::Duration;
//! use serde_json::json;
//! use nav_planner::vlm::{ImageDetail, Part, ScriptedVlm, ToolChoice, ToolSpec, VisionLanguageModel, VlmRequest};
//!
//! let rotate = ToolSpec::new("rotate", "Turn in place.", json!({
//!     "type": "object",
//!     "properties": {"degrees": {"type": "integer", "enum": [-90, -45, 45, 90]}},
//!     "required": ["degrees"],
//!     "additionalProperties": false,
//! }));
//! let request = VlmRequest::new("You steer a robot. Always call a tool.")
//!     .image(Part::jpeg(vec![0xFF, 0xD8, 0xFF, 0xD9], ImageDetail::Low))
//!     .text("LiDAR: front blocked at 0.4 m.")
//!     .tools(vec![rotate])
//!     .tool_choice(ToolChoice::Required)
//!     .timeout(Duration::from_secs(8));
//!
//! // A scripted model stands in for a provider; the HTTP backends behave alike.
//! let vlm = ScriptedVlm::new().then_tool_call("rotate", json!({"degrees": 90}));
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let reply = runtime.block_on(vlm.complete(request))?;
//! assert_eq!(reply.tool_calls[0].name, "rotate");
//! assert_eq!(reply.tool_calls[0].arguments["degrees"], 90);
//! assert_eq!(vlm.requests()[0].image_count(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Default features: `openai`, so that `cargo add nav-planner` can talk to
//! any OpenAI-compatible server (OpenAI itself, a local llama.cpp server,
//! Ollama, vLLM) with no extra flags; the other providers stay opt-in
//! because each adds code most users never run.
//!
//! Dependencies: `serde`/`serde_json` (configs and provider wire formats),
//! `thiserror` (the error enum), `async-trait` (the model trait is used as
//! `dyn VisionLanguageModel`, which native async trait methods do not yet
//! allow), `tokio` (timers for deadlines, retries and the scripted double;
//! processes for the Vertex token command), `tracing` (one event per HTTP
//! attempt, never with credentials), `base64` (images in request bodies),
//! `sha2` (the request hashes a replay matches on, and image digests).
//! Behind the backend features: `reqwest` with rustls (HTTPS without system
//! OpenSSL) and `rand` (retry jitter).
//!
//! Feature `record` adds [`record`]: a run as an MCAP file (camera, LiDAR,
//! poses, map, scene, step records, model calls) for Foxglove, Rerun and
//! other viewers, from any robot the runner drives, and a bounded reader of
//! such files; feature `live` serves the same channels live over the
//! Foxglove WebSocket protocol. They use `foxglove` (the official Foxglove
//! SDK: its well-known message types in Protobuf, MCAP writer and WebSocket
//! server), and `zstd` and `crc32fast` (the reader decompresses chunks and
//! checks CRCs itself, bounded, rather than trusting the lengths a damaged
//! file declares).
//!
//! Feature `mcp` adds `mcp`: the robot as an MCP server behind the safety
//! layer (`nav mcp`; docs/MCP.md), with `rmcp` (the official Rust MCP SDK:
//! the protocol, stdio and the Streamable HTTP transport) and `hyper`,
//! `hyper-util`, `http-body-util` and `bytes` (the HTTP server in front of
//! rmcp's transport, where the access token, Origin, size and rate are
//! checked).
//!
//! Feature `sim-bridge` adds `navigator::bridge_run`: ObjectNav episodes in
//! Habitat, MiniWorld or another simulator behind nav-hal's `BridgeHal`,
//! judged by the simulator's own SR / SPL (what `nav habitat` runs).
#![deny(missing_docs)]
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod navigator;
pub mod offline;
pub mod protocol;
#[cfg(feature = "record")]
pub mod record;
pub mod replay;
pub mod vlm;

pub use vlm::{
    BackendConfig, BackendInfo, FnVlm, MeteredVlm, PriceTable, Provider, ScriptedVlm, VisionLanguageModel, VlmError,
    VlmRequest, VlmResponse, build_backend,
};
