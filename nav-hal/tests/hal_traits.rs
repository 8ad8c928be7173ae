//! The HAL traits: object safety, defaults, and the simulator behind them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use nav_core::action::Action;
use nav_core::geometry::Point2;
use nav_hal::HalError;
use nav_hal::hal::{Actuators, Capabilities, Robot, Sensors, VelocityCommand};
use nav_hal::sim::{SimConfig, SimHal};

/// An adapter that only has odometry: everything else is a default.
struct OdometryOnly;

#[async_trait]
impl Sensors for OdometryOnly {
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    async fn odometry(&mut self) -> Result<nav_hal::hal::Odometry, HalError> {
        Ok(nav_hal::hal::Odometry {
            pose: Default::default(),
            linear: 0.0,
            angular: 0.0,
            stamp_s: 0.0,
            ground_truth: false,
        })
    }
}

#[async_trait]
impl Actuators for OdometryOnly {}

#[tokio::test]
async fn defaults_answer_unsupported() {
    let mut r: Box<dyn Robot> = Box::new(OdometryOnly);
    assert!(r.odometry().await.is_ok());
    assert!(matches!(r.scan().await, Err(HalError::Unsupported { .. })));
    assert!(matches!(r.rgb().await, Err(HalError::Unsupported { .. })));
    assert!(matches!(r.depth().await, Err(HalError::Unsupported { .. })));
    assert!(matches!(r.panorama(12).await, Err(HalError::Unsupported { .. })));
    assert!(matches!(r.detections().await, Err(HalError::Unsupported { .. })));
    let err = r.act(Action::Forward).await.unwrap_err();
    assert_eq!(err.to_string(), "unsupported by this robot: discrete actions");
    assert!(r.drive(VelocityCommand { linear: 0.1, angular: 0.0, duration_s: 1.0 }).await.is_err());
    assert!(r.move_to(Point2::new(1.0, 0.0)).await.is_err());
    assert!(r.stop().await.is_err());
    assert!(!r.capabilities().lidar);
}

#[tokio::test]
async fn the_simulator_is_a_robot() {
    let mut r: Box<dyn Robot> = Box::new(SimHal::builtin("simple", SimConfig::default()).unwrap());
    let caps = r.capabilities();
    assert!(caps.discrete_actions && caps.velocity && caps.move_to && caps.lidar && caps.rgb && caps.depth);
    assert!(caps.panorama && caps.detections && caps.pose_is_ground_truth);
    assert_eq!(caps.step.unwrap().forward_m, 0.25);
    let json = serde_json::to_string(&caps).unwrap();
    assert!(json.contains(r#""drive":{"kind":"differential"}"#), "{json}");
    let out = r.act(Action::Forward).await.unwrap();
    assert!(!out.collided);
    let odo = r.odometry().await.unwrap();
    assert!((odo.pose.x - (-1.5 + 0.25 * std::f64::consts::FRAC_1_SQRT_2)).abs() < 1e-12);
    assert_eq!(odo.stamp_s, 1.0);
    assert_eq!(r.scan().await.unwrap().scan.ranges.len(), 720);
    assert_eq!(r.panorama(4).await.unwrap().views.len(), 4);
    assert_eq!(r.depth().await.unwrap().depth_m.len(), 320 * 240);
    r.drive(VelocityCommand { linear: 0.1, angular: 0.0, duration_s: 0.5 }).await.unwrap();
    r.move_to(Point2::new(-1.0, -1.0)).await.unwrap();
    r.stop().await.unwrap();
    assert!(r.detections().await.unwrap().is_empty());
}
