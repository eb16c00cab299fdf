//! How benchspec launches an engine (`engine.launch`), resolved: the command split like a
//! shell does (none is run) with `$VAR`/`${VAR}` replaced from the environment, its extra
//! environment, the values that must never reach a file (every variable the command refers
//! to), and its timeouts; and the command as a shell reads it back with secrets hidden.

use super::ConfigError;
use crate::spec::Launch;
use crate::spec::command::{self, CommandError};
use std::time::Duration;

/// A launch, resolved against the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchConfig {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables for the engine.
    pub env: Vec<(String, String)>,
    /// The values of the environment variables the command and its env refer to (the API key
    /// among them), longest first: replaced by `<redacted>` in the engine's log.
    pub secrets: Vec<String>,
    /// How long the engine may take to become ready.
    pub ready_timeout: Duration,
    /// How long the engine may take to stop after SIGTERM before it is killed.
    pub stop_timeout: Duration,
    /// Relaunch the engine when it crashes mid-run.
    pub restart_on_crash: bool,
    /// Which replica this is (from 0) and of how many.
    pub replica: Replica,
}

/// One replica of a launched engine: `${REPLICA}` and `${PORT}` in its command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replica {
    /// `${REPLICA}`, from 0.
    pub index: u32,
    /// How many replicas are launched.
    pub of: u32,
    /// `${PORT}`: the port it listens on.
    pub port: u16,
}

impl Replica {
    /// What benchspec sets itself, else what `env` holds.
    fn var(&self, name: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        match name {
            "PORT" => Some(self.port.to_string()),
            "REPLICA" => Some(self.index.to_string()),
            _ => env(name),
        }
    }
}

impl LaunchConfig {
    /// `launch` of `replica` with `${VAR}` replaced from `env` (`${PORT}` and `${REPLICA}`
    /// from the replica); an unset variable is an error naming it.
    pub fn resolve(
        launch: &Launch,
        env: &dyn Fn(&str) -> Option<String>,
        replica: Replica,
    ) -> Result<LaunchConfig, ConfigError> {
        let vars = |name: &str| replica.var(name, env);
        let env: &dyn Fn(&str) -> Option<String> = &vars;
        let words = launch.command.args()?;
        let words: Vec<String> = words
            .iter()
            .map(|a| expand(a, env))
            .collect::<Result<_, _>>()?;
        let Some((program, args)) = words.split_first() else {
            return Err(CommandError::Empty.into());
        };
        let vars = launch
            .env
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand(v, env)?)))
            .collect::<Result<_, ConfigError>>()?;
        Ok(LaunchConfig {
            program: program.clone(),
            args: args.to_vec(),
            env: vars,
            secrets: secrets(launch, env),
            ready_timeout: launch.ready_timeout.0,
            stop_timeout: launch.stop_timeout.0,
            restart_on_crash: launch.restart_on_crash,
            replica,
        })
    }
}

/// Replace every `$VAR` and `${VAR}` in `text` from `env` (`$$` is one `$`); an unset
/// variable is an error naming it.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    command::expand(text, env).map_err(|e| match e {
        command::CommandError::Unset(name) => ConfigError::UnsetVar(name),
        e => ConfigError::Command(e),
    })
}

/// The values of the environment variables the launch command and its env refer to, which
/// must never reach a file.
fn secrets(launch: &Launch, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut texts: Vec<String> = launch.command.args().unwrap_or_default();
    texts.extend(launch.env.values().cloned());
    let mut values: Vec<String> = texts
        .iter()
        .flat_map(|t| command::env_refs(t))
        .filter(|name| name != "PORT" && name != "REPLICA")
        .filter_map(|name| env(&name))
        .filter(|v| v.len() >= 4)
        .collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    values
}

/// The launch command as a shell reads it back, secrets `<redacted>` (unexpanded: `${VAR}`
/// stays as written).
pub(super) fn shown(launch: &Launch) -> Option<String> {
    launch.command.args().ok().map(|a| {
        redact(&a)
            .iter()
            .map(|w| command::quote(w))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// The launch command with the value after `--api-key` (and any `${VAR}`-free key) hidden.
pub fn redact(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide = false;
    for a in args {
        if hide {
            out.push("<redacted>".to_string());
            hide = false;
        } else if a == "--api-key" {
            out.push(a.clone());
            hide = true;
        } else if a.starts_with("--api-key=") {
            out.push("--api-key=<redacted>".to_string());
        } else {
            out.push(a.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{LaunchCommand, Span};
    use std::collections::BTreeMap;

    fn launch(command: &str, env: &[(&str, &str)]) -> Launch {
        Launch {
            command: LaunchCommand::Line(command.into()),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect::<BTreeMap<_, _>>(),
            ready_timeout: Span(Duration::from_secs(5)),
            stop_timeout: Span(Duration::from_secs(1)),
            restart_on_crash: false,
        }
    }

    #[test]
    fn expansion() {
        let env = |n: &str| (n == "KEY").then(|| "s3cret".to_string());
        assert_eq!(
            expand("--api-key ${KEY} $KEY", &env).ok(),
            Some("--api-key s3cret s3cret".into())
        );
        assert!(expand("${NOPE}", &env).is_err_and(|e| e.to_string().contains("`${NOPE}`")));
    }

    #[test]
    fn resolved_launches() {
        let env = |n: &str| match n {
            "KEY" => Some("s3cret-key".to_string()),
            "GPU" => Some("1".to_string()),
            _ => None,
        };
        let l = LaunchConfig::resolve(
            &launch(
                "vllm serve m --api-key ${KEY}",
                &[("CUDA_VISIBLE_DEVICES", "$GPU")],
            ),
            &env,
            ONE,
        );
        let l = l.ok();
        assert_eq!(l.as_ref().map(|l| l.program.as_str()), Some("vllm"));
        assert_eq!(
            l.as_ref().map(|l| l.args.join(" ")),
            Some("serve m --api-key s3cret-key".into())
        );
        assert_eq!(
            l.as_ref().map(|l| l.env.clone()),
            Some(vec![("CUDA_VISIBLE_DEVICES".into(), "1".into())])
        );
        // Values shorter than 4 bytes are not hidden (they would hide every "1" in the log).
        assert_eq!(l.map(|l| l.secrets), Some(vec!["s3cret-key".to_string()]));
        let unset = LaunchConfig::resolve(&launch("vllm serve ${MODEL}", &[]), &env, ONE);
        assert!(matches!(unset, Err(ConfigError::UnsetVar(v)) if v == "MODEL"));
        let empty = LaunchConfig::resolve(&launch("  ", &[]), &env, ONE);
        assert!(matches!(empty, Err(ConfigError::Command(_))));
    }

    const ONE: Replica = Replica {
        index: 0,
        of: 1,
        port: 8000,
    };

    #[test]
    fn each_replica_gets_its_port_and_index() {
        let env = |n: &str| (n == "PORT").then(|| "9999".to_string());
        let l = launch(
            "vllm serve m --port ${PORT}",
            &[("CUDA_VISIBLE_DEVICES", "${REPLICA}")],
        );
        for index in 0..3 {
            let r = Replica {
                index,
                of: 3,
                port: 8000 + index as u16,
            };
            let got = LaunchConfig::resolve(&l, &env, r).ok();
            let got = got.as_ref();
            assert_eq!(
                got.map(|l| l.args.join(" ")),
                Some(format!("serve m --port {}", 8000 + index))
            );
            assert_eq!(
                got.map(|l| l.env.clone()),
                Some(vec![("CUDA_VISIBLE_DEVICES".into(), index.to_string())])
            );
            assert_eq!(got.map(|l| l.secrets.len()), Some(0), "a port is no secret");
        }
    }

    #[test]
    fn shown_hides_keys() {
        let l = launch("vllm serve m --api-key abc --api-key=def 'two words'", &[]);
        assert_eq!(
            shown(&l).as_deref(),
            Some("vllm serve m --api-key <redacted> --api-key=<redacted> 'two words'")
        );
    }
}
