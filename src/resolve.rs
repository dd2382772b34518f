//! The one place where a flag, the config file and kvrun's default combine into the
//! [`crate::settings`] types: a flag wins, then the config file, then the default. It sits
//! above `cli` and `config` so that neither they nor the settings depend on each other.

use crate::cli::{LlamaArgs, SamplingArgs, TierArgs};
use crate::config::FileConfig;
use crate::settings::{CtxSize, LlamaSettings, SamplingSettings, TierSettings};
use crate::tiers::{parse_bytes, parse_duration};

impl LlamaSettings {
    /// Flag, then config file, then default.
    pub fn resolve(args: &LlamaArgs, config: &FileConfig) -> Self {
        let defaults = Self::defaults();
        Self {
            ctx_size: args
                .ctx_size
                .and_then(CtxSize::tokens)
                .or(config.ctx_size)
                .unwrap_or(defaults.ctx_size),
            threads: args.threads.or(config.threads).unwrap_or(defaults.threads),
            gpu_layers: args
                .gpu_layers
                .or(config.gpu_layers)
                .unwrap_or(defaults.gpu_layers),
            batch_size: args
                .batch_size
                .or(config.batch_size)
                .unwrap_or(defaults.batch_size),
            kv_type: args.kv_type.or(config.kv_type).unwrap_or(defaults.kv_type),
            flash_attn: args
                .flash_attn
                .or(config.flash_attn)
                .unwrap_or(defaults.flash_attn),
        }
    }

    /// A session's recorded settings, with any flag given now taking precedence.
    pub fn resolve_over(args: &LlamaArgs, base: &LlamaSettings) -> Self {
        Self {
            ctx_size: args
                .ctx_size
                .and_then(CtxSize::tokens)
                .unwrap_or(base.ctx_size),
            threads: args.threads.unwrap_or(base.threads),
            gpu_layers: args.gpu_layers.unwrap_or(base.gpu_layers),
            batch_size: args.batch_size.unwrap_or(base.batch_size),
            kv_type: args.kv_type.unwrap_or(base.kv_type),
            flash_attn: args.flash_attn.unwrap_or(base.flash_attn),
        }
    }
}

impl SamplingSettings {
    /// Flag, then config file, then default.
    pub fn resolve(args: &SamplingArgs, config: &FileConfig) -> Self {
        let defaults = Self::defaults();
        Self {
            temp: args.temp.or(config.temp).unwrap_or(defaults.temp),
            top_k: args.top_k.or(config.top_k).unwrap_or(defaults.top_k),
            top_p: args.top_p.or(config.top_p).unwrap_or(defaults.top_p),
            min_p: args.min_p.or(config.min_p).unwrap_or(defaults.min_p),
            repeat_penalty: args
                .repeat_penalty
                .or(config.repeat_penalty)
                .unwrap_or(defaults.repeat_penalty),
            seed: args.seed.or(config.seed).unwrap_or(defaults.seed),
            ..defaults
        }
    }

    /// A session's recorded sampling, with any flag given now taking precedence.
    pub fn resolve_over(args: &SamplingArgs, base: &SamplingSettings) -> Self {
        Self {
            temp: args.temp.unwrap_or(base.temp),
            top_k: args.top_k.unwrap_or(base.top_k),
            top_p: args.top_p.unwrap_or(base.top_p),
            min_p: args.min_p.unwrap_or(base.min_p),
            repeat_penalty: args.repeat_penalty.unwrap_or(base.repeat_penalty),
            seed: args.seed.unwrap_or(base.seed),
            ..base.clone()
        }
    }
}

impl TierSettings {
    /// The tier flags, then the config file, then defaults; sizes and durations parsed.
    pub fn resolve(args: &TierArgs, config: &FileConfig) -> Result<Self, String> {
        let defaults = Self::default();
        let pick = |a: &Option<String>, c: &Option<String>| a.clone().or_else(|| c.clone());
        Ok(Self {
            hot_sessions: args
                .hot_sessions
                .or(config.hot_sessions)
                .unwrap_or(defaults.hot_sessions)
                .max(1),
            warm_budget: match pick(&args.warm_budget, &config.warm_budget) {
                Some(s) => parse_bytes(&s)?,
                None => defaults.warm_budget,
            },
            cold_budget: pick(&args.cold_budget, &config.cold_budget)
                .map(|s| parse_bytes(&s))
                .transpose()?,
            hot_idle: pick(&args.hot_idle, &config.hot_idle)
                .map(|s| parse_duration(&s))
                .transpose()?,
            warm_idle: pick(&args.warm_idle, &config.warm_idle)
                .map(|s| parse_duration(&s))
                .transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::KvType;

    #[test]
    fn a_flag_wins_over_the_config_file_over_the_default() {
        let config =
            FileConfig::parse("ctx-size = 4096\nkv-type = \"q8_0\"\ntemp = 0.5\n").unwrap();
        let args = LlamaArgs {
            ctx_size: Some(CtxSize::Tokens(2048)),
            ..Default::default()
        };
        let llama = LlamaSettings::resolve(&args, &config);
        assert_eq!(llama.ctx_size, 2048);
        // `auto` is kvrun serve's; elsewhere it leaves the config file's or the default.
        let auto = LlamaArgs {
            ctx_size: Some(CtxSize::Auto),
            ..Default::default()
        };
        assert_eq!(LlamaSettings::resolve(&auto, &config).ctx_size, 4096);
        assert_eq!(llama.kv_type, KvType::Q8_0);
        assert_eq!(llama.batch_size, LlamaSettings::defaults().batch_size);
        let sampling = SamplingSettings::resolve(&SamplingArgs::default(), &config);
        assert_eq!(sampling.temp, 0.5);
        assert_eq!(sampling.top_k, SamplingSettings::defaults().top_k);
    }

    #[test]
    fn tier_sizes_are_parsed_and_bad_ones_refused() {
        let config = FileConfig::parse("warm-budget = \"1GiB\"\n").unwrap();
        let tiers = TierSettings::resolve(&TierArgs::default(), &config).unwrap();
        assert_eq!(tiers.warm_budget, 1 << 30);
        let args = TierArgs {
            hot_idle: Some("soon".into()),
            ..Default::default()
        };
        assert!(TierSettings::resolve(&args, &config).is_err());
    }
}
