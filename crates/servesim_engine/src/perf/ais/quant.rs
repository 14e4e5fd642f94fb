//! Quantisation modes, by AIConfigurator's names: bytes per element and compute dtype.

use serde::{Deserialize, Serialize};

/// A GEMM's weight/activation mode (`gemm_quant_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GemmQuant {
    Bfloat16,
    Int8Wo,
    Int4Wo,
    Fp8,
    /// Per-tensor static fp8: the fp8 table less the dynamic scaling kernels.
    Fp8Static,
    Sq,
    Fp8Block,
    Fp8Ootb,
    Nvfp4,
    Nvfp4Wo,
    W4a16Nvfp4,
}

impl GemmQuant {
    pub const ALL: [GemmQuant; 11] = [
        GemmQuant::Bfloat16,
        GemmQuant::Int8Wo,
        GemmQuant::Int4Wo,
        GemmQuant::Fp8,
        GemmQuant::Fp8Static,
        GemmQuant::Sq,
        GemmQuant::Fp8Block,
        GemmQuant::Fp8Ootb,
        GemmQuant::Nvfp4,
        GemmQuant::Nvfp4Wo,
        GemmQuant::W4a16Nvfp4,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GemmQuant::Bfloat16 => "bfloat16",
            GemmQuant::Int8Wo => "int8_wo",
            GemmQuant::Int4Wo => "int4_wo",
            GemmQuant::Fp8 => "fp8",
            GemmQuant::Fp8Static => "fp8_static",
            GemmQuant::Sq => "sq",
            GemmQuant::Fp8Block => "fp8_block",
            GemmQuant::Fp8Ootb => "fp8_ootb",
            GemmQuant::Nvfp4 => "nvfp4",
            GemmQuant::Nvfp4Wo => "nvfp4_wo",
            GemmQuant::W4a16Nvfp4 => "w4a16_nvfp4",
        }
    }

    pub fn parse(name: &str) -> Option<GemmQuant> {
        GemmQuant::ALL.into_iter().find(|q| q.name() == name)
    }

    /// Bytes per weight element.
    pub fn memory(self) -> f64 {
        match self {
            GemmQuant::Bfloat16 => 2.0,
            GemmQuant::Int8Wo | GemmQuant::Fp8 | GemmQuant::Fp8Static | GemmQuant::Sq | GemmQuant::Fp8Block | GemmQuant::Fp8Ootb => 1.0,
            GemmQuant::Int4Wo => 0.5,
            GemmQuant::Nvfp4 | GemmQuant::Nvfp4Wo | GemmQuant::W4a16Nvfp4 => 9.0 / 16.0,
        }
    }

    /// The tensor-core dtype the kernel computes in.
    pub fn compute_dtype(self) -> &'static str {
        match self {
            GemmQuant::Bfloat16 | GemmQuant::Int8Wo | GemmQuant::Int4Wo | GemmQuant::Nvfp4Wo | GemmQuant::W4a16Nvfp4 => "bfloat16",
            GemmQuant::Fp8 | GemmQuant::Fp8Static | GemmQuant::Fp8Block | GemmQuant::Fp8Ootb => "fp8",
            GemmQuant::Sq => "int8",
            GemmQuant::Nvfp4 => "fp4",
        }
    }

    /// The table the mode reads (fp8_static reads fp8's).
    pub fn table_quant(self) -> GemmQuant {
        if self == GemmQuant::Fp8Static { GemmQuant::Fp8 } else { self }
    }
}

/// The KV cache's dtype (`kvcache_quant_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvQuant {
    Bfloat16,
    Int8,
    Fp8,
}

impl KvQuant {
    pub fn name(self) -> &'static str {
        match self {
            KvQuant::Bfloat16 => "bfloat16",
            KvQuant::Int8 => "int8",
            KvQuant::Fp8 => "fp8",
        }
    }

    pub fn parse(name: &str) -> Option<KvQuant> {
        [KvQuant::Bfloat16, KvQuant::Int8, KvQuant::Fp8].into_iter().find(|q| q.name() == name)
    }

    pub fn memory(self) -> f64 {
        if self == KvQuant::Bfloat16 { 2.0 } else { 1.0 }
    }
}

/// Attention's compute dtype (`fmha_quant_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FmhaQuant {
    Bfloat16,
    Fp8,
    Fp8Block,
}

impl FmhaQuant {
    pub fn name(self) -> &'static str {
        match self {
            FmhaQuant::Bfloat16 => "bfloat16",
            FmhaQuant::Fp8 => "fp8",
            FmhaQuant::Fp8Block => "fp8_block",
        }
    }

    pub fn parse(name: &str) -> Option<FmhaQuant> {
        [FmhaQuant::Bfloat16, FmhaQuant::Fp8, FmhaQuant::Fp8Block].into_iter().find(|q| q.name() == name)
    }

    pub fn memory(self) -> f64 {
        if self == FmhaQuant::Bfloat16 { 2.0 } else { 1.0 }
    }

    pub fn compute_dtype(self) -> &'static str {
        if self == FmhaQuant::Bfloat16 { "bfloat16" } else { "fp8" }
    }
}
