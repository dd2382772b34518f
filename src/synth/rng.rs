//! The random numbers behind synthetic weights: seeded, so a test model is the same file
//! every time.

/// splitmix64: tiny, seedable and good enough for random weights.
#[derive(Clone, Copy)]
pub(crate) struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub(crate) fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    /// `ne0 * ne1` weights, uniform in ±1/sqrt(ne0). ggml matrices are [in, out] with the
    /// input dimension contiguous, so ne0 is the fan-in and activations keep a sane scale.
    pub(crate) fn matrix(&mut self, ne0: u32, ne1: u32) -> Vec<f32> {
        let scale = 1.0 / (ne0 as f32).sqrt();
        (0..u64::from(ne0) * u64::from(ne1))
            .map(|_| self.uniform() * scale)
            .collect()
    }
}
