//! # nav-planner
//!
//! The deliberative layer of navkit: a vision-language model decides *where
//! to go*; this crate asks it, safely and cheaply.
//!
//! - [`vlm`]: the [`VisionLanguageModel`] trait (one async method,
//!   `complete(VlmRequest) -> Result<VlmResponse, VlmError>`), its test
//!   doubles [`ScriptedVlm`] and [`FnVlm`], the [`MeteredVlm`] statistics
//!   wrapper, the providers' JSON codecs ([`vlm::wire`]), prices
//!   ([`PriceTable`]), and the HTTP backends behind cargo features:
//!   `openai` (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server), `gemini`
//!   (Google AI and Vertex AI) and `anthropic`. [`build_backend`] builds one
//!   from a serde [`BackendConfig`].
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
//! Dependencies: `serde`/`serde_json` (configs and provider wire formats),
//! `thiserror` (the error enum), `async-trait` (the model trait is used as
//! `dyn VisionLanguageModel`, which native async trait methods do not yet
//! allow), `tokio` (timers for deadlines, retries and the scripted double;
//! processes for the Vertex token command), `tracing` (one event per HTTP
//! attempt, never with credentials), `base64` (images in request bodies).
//! Behind the backend features: `reqwest` with rustls (HTTPS without system
//! OpenSSL) and `rand` (retry jitter).
//!
//! Feature `sim-bridge` adds `bridge_run`: ObjectNav episodes in Habitat,
//! MiniWorld or another simulator behind nav-hal's `BridgeHal`, judged by
//! the simulator's own SR / SPL (what `nav habitat` runs).
#![deny(missing_docs)]

pub mod annotate;
#[cfg(feature = "sim-bridge")]
pub mod bridge_run;
pub mod episode;
pub mod eval;
pub mod mapping;
pub mod navigator;
pub mod offline;
pub mod parse;
pub mod prompts;
pub mod protocol;
pub mod vlm;

pub use vlm::{
    BackendConfig, BackendInfo, FnVlm, MeteredVlm, PriceTable, Provider, ScriptedVlm, VisionLanguageModel, VlmError,
    VlmRequest, VlmResponse, build_backend,
};
