//! The seed's memory, made real: the offline stand-in that plays the
//! planner VLM answers from the request alone (a fresh stand-in given a
//! logged request answers exactly what the logged one answered, in any
//! order), memory off removes the Navigation Context and nothing else, and
//! every step record names the memory's place type.

use crate::run;
use async_trait::async_trait;
use nav_hal::arena::Arena;
use nav_hal::sim::{SimConfig, SimHal, SimWorld};
use nav_planner::navigator::episode::EpisodeSpec;
use nav_planner::navigator::objectnav_loop::{ObjectNavLoop, ObjectNavLoopConfig, ObjectNavParts};
use nav_planner::navigator::pixel_policy::PixelGoalPolicy;
use nav_planner::navigator::{RunContext, StepLog};
use nav_planner::offline::{
    Eyes, LabelBufferPerception, OfflineObjectNavConfig, OfflineObjectNavPlanner, OfflineSceneAnalyzer,
};
use nav_planner::protocol::PlannerReply;
use nav_planner::protocol::objectnav::{ObjectNavDecision, ObjectNavObservation, ObjectNavPlanner, user_text};
use std::sync::{Arc, Mutex};

/// One request as the stand-in got it: the user text, its eyes, and the
/// reply text it gave.
type Logged = (String, Eyes, String);

/// Wraps the stand-in and logs each request it answered.
struct Logging {
    inner: OfflineObjectNavPlanner,
    log: Arc<Mutex<Vec<Logged>>>,
}

#[async_trait]
impl ObjectNavPlanner for Logging {
    fn name(&self) -> String {
        self.inner.name()
    }
    async fn plan(&mut self, obs: &ObjectNavObservation<'_>) -> PlannerReply<ObjectNavDecision> {
        let reply = self.inner.plan(obs).await;
        let text = user_text(obs, false);
        let eyes = Eyes::of(obs.panorama, self.inner.config().camera_height_m);
        self.log.lock().unwrap().push((text, eyes, reply.record.raw[0].clone()));
        reply
    }
}

fn standin() -> OfflineObjectNavPlanner {
    OfflineObjectNavPlanner::new(OfflineObjectNavConfig {
        camera_height_m: Some(SimConfig::default().camera.height_m),
        ..OfflineObjectNavConfig::default()
    })
}

#[tokio::test]
async fn a_fresh_standin_answers_every_logged_request_as_the_logged_one_did() {
    let arena = Arena::builtin("house_c").unwrap();
    let world = SimWorld::new(arena, SimConfig::default()).unwrap();
    let clock = world.clock();
    let mut hal = SimHal::new(world);
    let log = Arc::new(Mutex::new(Vec::new()));
    let parts = ObjectNavParts {
        planner: Box::new(Logging { inner: standin(), log: log.clone() }),
        policy: Box::new(PixelGoalPolicy::default()),
        perception: Box::new(LabelBufferPerception::default()),
        scene: Box::new(OfflineSceneAnalyzer::new()),
    };
    let config = ObjectNavLoopConfig { max_steps: 150, ..ObjectNavLoopConfig::default() };
    let mut lp = ObjectNavLoop::new(config, "bed", parts).unwrap();
    let mut steps = StepLog::memory();
    let mut ctx = RunContext::new(clock.as_ref(), &mut steps);
    lp.run(&mut hal, &mut ctx).await.unwrap();
    let logged = log.lock().unwrap().clone();
    assert!(logged.len() >= 3, "{} requests", logged.len());
    assert!(logged.iter().skip(1).any(|(t, _, _)| t.contains("Been (bearing")), "the context tells where it has been");
    // a fresh stand-in, the requests in reverse order: nothing carried between calls
    let fresh = standin();
    for (text, eyes, reply) in logged.iter().rev() {
        assert_eq!(&fresh.answer(text, eyes), reply, "request:\n{text}");
    }
}

#[tokio::test]
async fn memory_off_removes_the_navigation_context_and_nothing_else() {
    let mut spec = EpisodeSpec::new(Arena::builtin("house_a").unwrap(), "builtin:house_a");
    spec.max_steps = Some(60);
    spec.memory = false;
    let (off, records) = run(&spec).await;
    assert_eq!(off.planner, "offline");
    let raw: Vec<&str> = records.iter().filter_map(|r| r.planner.as_ref()).map(|p| p.raw[0].as_str()).collect();
    assert!(!raw.is_empty());
    // the memory still runs (its counters are the oscillation metrics) and names the places
    assert!(records.iter().skip(1).all(|r| r.place_id.is_some()));
    assert!(records.iter().any(|r| r.place_type.is_some()), "place_type on the step records");
    let json = serde_json::to_value(&records[1]).unwrap();
    assert!(json.as_object().unwrap().contains_key("place_type"), "every record carries place_type: {json}");
    let scene_events = records.iter().flat_map(|r| r.events.iter()).filter(|e| e["event"] == "scene_analyzed").count();
    assert_eq!(scene_events as u32, off.scene_calls, "every scene analysis is logged");
}
