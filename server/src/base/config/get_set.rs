//! CONFIG GET and CONFIG SET on a [`Config`]: matching names and glob patterns against the table
//! (aliases and hidden parameters as Redis 7.0 treats them), and setting several parameters all
//! or nothing, with Redis's order of checks and its error texts.

use embedis_datatypes::glob;

use super::{find_param_named, Config, Param, DENY_LOADING, HIDDEN, PARAMS, PROTECTED};

impl Config {
    /// [`find_param_named`] among the parameters this config's `compat-version` has.
    pub fn param_named(&self, name: &str) -> Option<(&'static Param, &'static str)> {
        find_param_named(name).filter(|(p, _)| p.exists_in(self.compat_version))
    }

    /// `(name, value)` of every parameter whose name (or alias) matches one of `patterns`, as
    /// CONFIG GET answers: a pattern without glob characters is looked up directly and answered
    /// under the name as typed (`HZ`), a glob lists the parameters under their own names; a
    /// parameter already listed (ignoring case) is not listed again.
    pub fn matching(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut push = |name: &str, value: String| {
            if !out.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                out.push((name.to_string(), value));
            }
        };
        for pattern in patterns {
            if !pattern.iter().any(|b| matches!(b, b'[' | b'*' | b'?')) {
                if let Ok(name) = std::str::from_utf8(pattern) {
                    if let Some((p, _)) = self.param_named(name) {
                        push(name, (p.get)(self));
                    }
                }
                continue;
            }
            for p in PARAMS {
                if HIDDEN.contains(&p.name) || !p.exists_in(self.compat_version) {
                    continue;
                }
                if glob::matches(pattern, p.name.as_bytes(), true) {
                    push(p.name, (p.get)(self));
                }
                for alias in p.aliases {
                    if glob::matches(pattern, alias.as_bytes(), true) {
                        push(alias, (p.get)(self));
                    }
                }
            }
        }
        out
    }

    /// Applies name/value pairs all-or-nothing, as CONFIG SET does, refusing protected
    /// parameters. Errors carry Redis's text.
    pub fn set_many(&mut self, pairs: &[(&str, &str)]) -> Result<(), String> {
        self.set_many_with(pairs, false, false)
    }

    /// CONFIG SET's all-or-nothing update, in Redis's two phases: first the names (an unknown
    /// name wins over every other error, unless an earlier pair already failed; then immutable,
    /// protected and duplicate parameters, reported under the name as typed), then the values
    /// (reported under the lower-case name or alias that was typed). Nothing changes unless all
    /// pass.
    /// `allow_protected` says whether `enable-protected-configs` lets this client change
    /// protected parameters such as `dir`; while `loading` (a replica's async load too), the
    /// parameters a load depends on ([`DENY_LOADING`]) answer Redis's LOADING error.
    pub fn set_many_with(
        &mut self,
        pairs: &[(&str, &str)],
        allow_protected: bool,
        loading: bool,
    ) -> Result<(), String> {
        // Names are quoted as C prints them: up to a NUL byte.
        let c_name = |name: &str| name.split('\0').next().unwrap_or("").to_string();
        let fail = |name: &str, why: &dyn std::fmt::Display| {
            format!(
                "ERR CONFIG SET failed (possibly related to argument '{}') - {why}",
                c_name(name)
            )
        };
        let mut resolved: Vec<(&'static Param, &'static str, &str)> = Vec::new();
        let mut first_error: Option<String> = None;
        for (name, value) in pairs {
            let Some((param, own_name)) = self.param_named(name) else {
                if first_error.is_none() {
                    return Err(format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                        c_name(name)
                    ));
                }
                continue;
            };
            if first_error.is_some() {
                continue;
            }
            if !param.mutable {
                first_error = Some(fail(name, &"can't set immutable config"));
            } else if PROTECTED.contains(&param.name) && !allow_protected {
                first_error = Some(fail(name, &"can't set protected config"));
            } else if loading && DENY_LOADING.contains(&param.name) {
                first_error = Some("LOADING Redis is loading the dataset in memory".into());
                continue;
            }
            // Redis 7.0 keys an alias as a name of its own: `min-replicas-to-write 1
            // min-slaves-to-write 2` is no duplicate (the last one wins), `hz 1 HZ 2` is.
            if resolved.iter().any(|(_, seen, _)| *seen == own_name) {
                first_error = Some(fail(name, &"duplicate parameter"));
            }
            resolved.push((param, own_name, value));
        }
        if let Some(error) = first_error {
            return Err(error);
        }
        for (param, own_name, value) in &resolved {
            param
                .validate(value, self.compat_version)
                .map_err(|e| fail(own_name, &e))?;
        }
        for (param, _, value) in resolved {
            (param.set)(self, value);
        }
        Ok(())
    }
}
