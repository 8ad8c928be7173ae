//! The radix-heap open list of the A* search and the distance fields.

/// The open list of [`GridPlanner`]: a radix heap on the bits of `f`.
///
/// Non-negative `f64`s order like their bit patterns, and with a
/// consistent heuristic the popped `f` never decreases, which is all a
/// radix heap needs: a key lives in the bucket of the highest bit in which
/// it differs from the last popped key, so a push is one `leading_zeros`
/// and a `Vec` push, and a pop only redistributes the lowest non-empty
/// bucket. Keys equal to the last popped one (bucket 0) pop newest first,
/// which prefers the deeper of equal-`f` cells. A key that rounding puts a
/// few ulps below the last popped one is clamped to it: it is the minimum
/// either way.
#[derive(Debug, Clone)]
pub(super) struct OpenList {
    last: u64,
    /// Bit `i` set: bucket `i` is not empty.
    occupied: u64,
    buckets: Vec<Vec<(u64, u32)>>,
}

impl Default for OpenList {
    fn default() -> Self {
        Self { last: 0, occupied: 0, buckets: vec![Vec::new(); 64] }
    }
}

impl OpenList {
    /// Bucket of `key`: 0 when equal to `last`, else one plus the index
    /// of the highest differing bit. Both are non-negative `f64`s, so the
    /// sign bit never differs and the bucket is below 64.
    fn bucket(last: u64, key: u64) -> usize {
        (64 - (key ^ last).leading_zeros()) as usize
    }

    pub(super) fn clear(&mut self) {
        self.last = 0;
        self.occupied = 0;
        for b in &mut self.buckets {
            b.clear();
        }
    }

    pub(super) fn push(&mut self, f: f64, idx: u32) {
        let key = f.to_bits().max(self.last);
        let b = Self::bucket(self.last, key);
        self.buckets[b].push((key, idx));
        self.occupied |= 1 << b;
    }

    /// Removes an entry with the smallest `f` and returns its cell index.
    pub(super) fn pop(&mut self) -> Option<u32> {
        if self.occupied & 1 == 0 {
            if self.occupied == 0 {
                return None;
            }
            let i = self.occupied.trailing_zeros() as usize;
            self.occupied &= !(1 << i);
            if let [(key, idx)] = self.buckets[i][..] {
                // a lone entry: it is the minimum, nothing to redistribute
                self.buckets[i].clear();
                self.last = key;
                return Some(idx);
            }
            let mut moved = std::mem::take(&mut self.buckets[i]);
            let last = moved.iter().map(|e| e.0).min()?;
            self.last = last;
            for &(key, idx) in &moved {
                let b = Self::bucket(last, key);
                self.buckets[b].push((key, idx));
                self.occupied |= 1 << b;
            }
            moved.clear();
            self.buckets[i] = moved; // keep its capacity
        }
        let bottom = &mut self.buckets[0];
        let e = bottom.pop()?;
        if bottom.is_empty() {
            self.occupied &= !1;
        }
        Some(e.1)
    }
}
