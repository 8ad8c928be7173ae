//! The noise model of the offline VLM stand-in (`--vlm-noise
//! miss=0.1,false=0.05,angle=15,seed=7`): how often a real model misses a
//! target that is in the panorama, how often it claims one that is not,
//! and how far off its angles are.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// See the [module docs](self). The default is no noise.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VlmNoise {
    /// Probability that a call does not see a target that is in the
    /// panorama; [0, 1].
    pub miss: f64,
    /// Probability that a call without the target in view claims it anyway
    /// (`goal_flag: true` toward a random view); [0, 1].
    #[serde(rename = "false")]
    pub false_sighting: f64,
    /// Standard deviation of the error added to every angle, degrees; [0, 180].
    pub angle_deg: f64,
    /// Seed of the noise (mixed with the episode seed).
    pub seed: u64,
}

impl VlmNoise {
    /// True when the model is noise-free.
    pub fn is_off(&self) -> bool {
        self.miss == 0.0 && self.false_sighting == 0.0 && self.angle_deg == 0.0
    }

    /// The noise source for one episode.
    pub fn rng(&self, episode_seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed ^ episode_seed.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// A zero-mean Gaussian angle error, degrees.
    pub fn angle_error(&self, rng: &mut impl Rng) -> f64 {
        if self.angle_deg <= 0.0 {
            return 0.0;
        }
        let u1: f64 = rng.random::<f64>().max(1e-12);
        let u2: f64 = rng.random();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos() * self.angle_deg
    }
}

impl fmt::Display for VlmNoise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "miss={},false={},angle={},seed={}", self.miss, self.false_sighting, self.angle_deg, self.seed)
    }
}

impl FromStr for VlmNoise {
    type Err = String;

    /// Parses `miss=P,false=P,angle=DEG,seed=N` (any subset, any order;
    /// `none` or an empty string for no noise). Errors name the key.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut n = VlmNoise::default();
        let s = s.trim();
        if s.is_empty() || s == "none" {
            return Ok(n);
        }
        for part in s.split(',') {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("--vlm-noise: {part:?} is not KEY=VALUE (keys: miss, false, angle, seed)"))?;
            let (k, v) = (k.trim(), v.trim());
            let num = || v.parse::<f64>().ok().filter(|x| x.is_finite());
            let prob = |key: &str| {
                num()
                    .filter(|x| (0.0..=1.0).contains(x))
                    .ok_or_else(|| format!("--vlm-noise {key}: {v:?} is not a probability in [0, 1]"))
            };
            match k {
                "miss" => n.miss = prob("miss")?,
                "false" => n.false_sighting = prob("false")?,
                "angle" => {
                    n.angle_deg = num()
                        .filter(|x| (0.0..=180.0).contains(x))
                        .ok_or_else(|| format!("--vlm-noise angle: {v:?} is not degrees in [0, 180]"))?;
                }
                "seed" => {
                    n.seed = v.parse().map_err(|_| format!("--vlm-noise seed: {v:?} is not a non-negative integer"))?
                }
                other => return Err(format!("--vlm-noise: unknown key {other:?} (keys: miss, false, angle, seed)")),
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_the_documented_form_and_names_bad_keys() {
        let n: VlmNoise = "miss=0.1,false=0.05,angle=15,seed=7".parse().unwrap();
        assert_eq!(n, VlmNoise { miss: 0.1, false_sighting: 0.05, angle_deg: 15.0, seed: 7 });
        assert!("none".parse::<VlmNoise>().unwrap().is_off());
        assert!("miss=2".parse::<VlmNoise>().unwrap_err().contains("miss"));
        assert!("angle=-1".parse::<VlmNoise>().unwrap_err().contains("angle"));
        assert!("colour=1".parse::<VlmNoise>().unwrap_err().contains("colour"));
        assert!("miss".parse::<VlmNoise>().unwrap_err().contains("KEY=VALUE"));
        assert!("seed=x".parse::<VlmNoise>().unwrap_err().contains("seed"));
    }

    proptest! {
        #[test]
        fn display_round_trips(m in 0.0f64..=1.0, f in 0.0f64..=1.0, a in 0.0f64..=180.0, seed in any::<u64>()) {
            let n = VlmNoise { miss: m, false_sighting: f, angle_deg: a, seed };
            prop_assert_eq!(n.to_string().parse::<VlmNoise>().unwrap(), n);
        }

        #[test]
        fn parser_never_panics(s in ".{0,60}") {
            let _ = s.parse::<VlmNoise>();
        }
    }
}
