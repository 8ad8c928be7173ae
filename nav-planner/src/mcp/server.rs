//! One client's MCP handler: the tools, the resources, the lease check.

use super::Shared;
use super::core::ToolReply;
use nav_safety::ToolCall;
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

/// The exploration memory resource.
const MEMORY_URI: &str = "navkit://memory/exploration";
/// The Navigation Context resource.
const CONTEXT_URI: &str = "navkit://memory/navigation-context";

/// What the server tells an agent host when it connects.
const INSTRUCTIONS: &str = "You drive a mobile robot (navkit). Every motion tool goes through a safety layer you \
cannot bypass: it may slow, shorten or refuse a call, and says why in the result (isError when refused); a \
direction refused twice within 15 s is suppressed for a while. A continuous LiDAR guard checks every command at \
20 Hz. Motion runs between your calls, but the robot stops 3 s after your last motion call (move_toward, rotate, \
navigate_to_goal) unless another comes: keep calling while you drive. stop_robot always works. get_state gives \
pose, speed, safety state and the LiDAR sectors (bearings clockwise from the front); get_map the explored map; \
observe_scene the camera image with depth values. One client drives at a time (the motion lease).";

/// A client's slot: its id and name; leaving frees its lease.
struct ClientSlot {
    id: u64,
    name: Mutex<String>,
    shared: Weak<Shared>,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let Some(shared) = self.shared.upgrade() else { return };
        let held = shared.lease.lock().map(|mut l| l.release(self.id)).unwrap_or(false);
        if held {
            // the driver left: stop now rather than at the watchdog's time
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let mut core = shared.core.lock().await;
                    // unless another client has taken the lease meanwhile
                    if shared.lease.lock().is_ok_and(|l| l.is_free()) {
                        core.halt("the driving client disconnected").await;
                    }
                });
            }
        }
    }
}

/// The MCP handler of one client of an [`McpRobot`](super::McpRobot).
#[derive(Clone)]
pub struct NavMcpServer {
    shared: Arc<Shared>,
    client: Arc<ClientSlot>,
}

impl NavMcpServer {
    pub(crate) fn new(shared: Arc<Shared>, id: u64) -> Self {
        let client = Arc::new(ClientSlot { id, name: Mutex::new("unnamed".into()), shared: Arc::downgrade(&shared) });
        Self { shared, client }
    }

    /// This client's id (lease messages name clients by it).
    pub fn client_id(&self) -> u64 {
        self.client.id
    }

    /// The tools: the seven explore tools (nav-safety's strict schemas with
    /// the configured speed tiers) and `get_state`, `get_map`.
    pub async fn tools(&self) -> Vec<Tool> {
        let speeds = self.shared.core.lock().await.config().safety.speeds.clone();
        let mut tools: Vec<Tool> = nav_safety::tool_schemas_for(&speeds)
            .into_iter()
            .map(|s| {
                let schema = match s.parameters {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                Tool::new(s.name, s.description, schema)
            })
            .collect();
        let empty = || match json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        tools.push(Tool::new(
            "get_state",
            "The robot's pose, speed, the action in progress, the safety state (watchdog tier, stops and guard \
             overrides in force, collisions), the motion lease and the 12 LiDAR sectors.",
            empty(),
        ));
        tools.push(Tool::new(
            "get_map",
            "The explored map (LiDAR occupancy: white free, dark obstacles, grey unknown; north up) with the path \
             travelled in blue and the robot in green, as a PNG image.",
            empty(),
        ));
        tools
    }

    /// Runs one tool call for this client: the lease for motion, the
    /// safety layer for everything.
    pub async fn call(&self, name: &str, args: Value) -> CallToolResult {
        match name {
            "get_state" => {
                let core = self.shared.core.lock().await;
                let lease = self.lease_line();
                let mut r =
                    CallToolResult::success(vec![ContentBlock::text(format!("{}\n{lease}", core.state_text()))]);
                r.structured_content = Some(core.state_json());
                r
            }
            "get_map" => match self.shared.core.lock().await.map_png() {
                Ok(img) => CallToolResult::success(vec![
                    ContentBlock::image(img.base64, img.mime),
                    ContentBlock::text("Explored map: north up, path in blue, robot in green."),
                ]),
                Err(e) => CallToolResult::error(vec![ContentBlock::text(format!("The map could not be drawn: {e}"))]),
            },
            _ => self.explore_tool(name, &args).await,
        }
    }

    /// One of the seven explore tools.
    async fn explore_tool(&self, name: &str, args: &Value) -> CallToolResult {
        let call = match ToolCall::parse(name, args) {
            Ok(c) => c,
            Err(e) => return CallToolResult::error(vec![ContentBlock::text(format!("Invalid call: {e}"))]),
        };
        if call.is_action() && !matches!(call, ToolCall::StopRobot { .. }) {
            let who = self.client.name.lock().map(|n| n.clone()).unwrap_or_default();
            let taken = self
                .shared
                .lease
                .lock()
                .map_err(|_| "the lease is unavailable".to_owned())
                .and_then(|mut l| l.acquire(self.client.id, &who, Instant::now()));
            if let Err(msg) = taken {
                return CallToolResult::error(vec![ContentBlock::text(msg)]);
            }
        }
        let mut core = self.shared.core.lock().await;
        let reply = core.call(&call).await;
        let image = if matches!(call, ToolCall::ObserveScene { .. }) { Some(core.camera_jpeg().await) } else { None };
        let lidar = image.is_some().then(|| core.state_text());
        drop(core);
        result_of(reply, image, lidar)
    }

    fn lease_line(&self) -> String {
        self.shared.lease.lock().map(|l| l.describe(self.client.id, Instant::now())).unwrap_or_default()
    }

    /// The text of a resource, or `None` for an unknown URI.
    pub async fn resource(&self, uri: &str) -> Option<String> {
        let mut core = self.shared.core.lock().await;
        match uri {
            MEMORY_URI => Some(core.memory_text()),
            CONTEXT_URI => Some(core.navigation_context()),
            _ => None,
        }
    }

    fn note_client(&self, context: &RequestContext<RoleServer>) {
        if let Some(info) = context.peer.peer_info() {
            if let Ok(mut n) = self.client.name.lock() {
                let name: String = info.client_info.name.chars().filter(|c| !c.is_control()).take(64).collect();
                *n = name;
            }
        }
    }
}

/// The tool result: the reply's text (and for `observe_scene` the image
/// and the state with the LiDAR sectors), `isError` when refused.
fn result_of(
    reply: ToolReply,
    image: Option<Result<super::ImagePart, String>>,
    state: Option<String>,
) -> CallToolResult {
    let mut content = Vec::new();
    match image {
        Some(Ok(img)) => content.push(ContentBlock::image(img.base64, img.mime)),
        Some(Err(e)) => content.push(ContentBlock::text(format!("No camera image: {e}"))),
        None => {}
    }
    content.push(ContentBlock::text(reply.text));
    if let Some(s) = state {
        content.push(ContentBlock::text(s));
    }
    let mut r = if reply.refused { CallToolResult::error(content) } else { CallToolResult::success(content) };
    r.structured_content = Some(reply.json);
    r
}

impl ServerHandler for NavMcpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("navkit", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools().await))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.note_client(&context);
        let args = Value::Object(request.arguments.unwrap_or_default());
        Ok(self.call(&request.name, args).await.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(MEMORY_URI, "exploration-memory")
                .with_description("Rooms, frontiers, dead ends and recent actions, as the explore model reads them.")
                .with_mime_type("text/plain"),
            Resource::new(CONTEXT_URI, "navigation-context")
                .with_description("The Navigation Context: places visited, where they lie, headings tried.")
                .with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match self.resource(&request.uri).await {
            Some(text) => Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri)]).into()),
            None => Err(ErrorData::resource_not_found(format!("no resource {}", request.uri), None)),
        }
    }
}
