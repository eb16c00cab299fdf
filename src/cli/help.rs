//! The exit codes each command's `--help` ends with: the five codes of docs/cli.md, said for
//! what that command does. Added to the parser built from the derive, so each command's
//! definition stays where it is.

use clap::CommandFactory;

/// Each command's exit codes, as its `--help` lists them.
const EXIT_CODES: [(&str, &str); 15] = [
    (
        "validate",
        "0  every spec is valid (warnings allowed)\n2  some spec is invalid or cannot be read",
    ),
    (
        "schema",
        "0  printed or written\n1  the file cannot be written\n2  bad usage",
    ),
    (
        "plan",
        "0  planned\n2  bad usage, an invalid spec or a bad --shard",
    ),
    (
        "run",
        "0  every cell is valid\n1  finished, but some cell is invalid or failed, or none was measured (every cell skipped); or stopped (Ctrl-C, SIGTERM); or a run directory file cannot be written\n2  bad usage or an invalid spec: nothing was run\n3  the engine could not be launched, reached or kept alive\n4  storage failure: the --history database cannot be opened or is newer (nothing was run), or the run could not be added to it",
    ),
    (
        "report",
        "0  rendered\n1  a report cannot be written\n2  bad usage, not a run directory, or a broken template",
    ),
    (
        "compare",
        "0  no regression\n1  a regression\n2  bad usage, or a run directory cannot be read",
    ),
    (
        "merge",
        "0  merged\n1  the merged directory cannot be written\n2  refused: bad usage, different specs, a cell twice, cells missing",
    ),
    (
        "sim",
        "0  stopped\n2  bad usage or an unknown profile\n3  the port cannot be bound",
    ),
    (
        "history",
        "0  done\n1  trend: the newest point of a series is a regression; or an output (trend --out, site) cannot be written\n2  bad usage, a run directory that cannot be read, a predicted run without --allow-predicted, no database at --db (list, trend, site), or filters that match no series\n4  storage failure: the database cannot be opened or queried or is newer",
    ),
    (
        "import",
        "0  imported\n1  a file cannot be written\n2  bad usage, a file that cannot be read or is not the tool's, or a non-empty --out",
    ),
    (
        "export",
        "0  written\n1  a file cannot be written\n2  bad usage or not a run directory",
    ),
    (
        "fit",
        "0  fitted and written (parameters no cell constrains are reported NOT IDENTIFIED)\n1  the twin file cannot be written\n2  bad usage, no run directory with a measured cell, or runs of more than one engine, model or variant without --engine, --model or --variant",
    ),
    (
        "predict",
        "0  predicted\n1  the spec could not be run against the twin (every cell's values come from that run)\n2  bad usage, an invalid spec, a twin file that cannot be read or that validate refuses (a negative cost), a twin that knows none of the spec's values (its parameters not identified), a spec naming another engine, model or hardware with --strict, or an --out that is not empty",
    ),
    (
        "tune",
        "0  a winner\n1  no measured configuration met the SLO, interrupted (run it again to go on), or tune.json or the run directory cannot be written\n2  bad usage, an invalid spec, a spec without slo, fewer than two configurations, usd-per-mtok without a hardware.cost_per_hour above 0, an --out that is a file, or one not empty that holds neither tune.json nor a run of this spec\n3  an engine that could not be launched or reached",
    ),
    (
        "init",
        "0  the spec is written\n2  bad usage, or the file exists (add --force)\n3  the server cannot be reached or serves no model",
    ),
];

/// The command line's parser, each command's `--help` ending with its exit codes.
pub fn command() -> clap::Command {
    let cmd = super::Cli::command().after_help(
        "Exit codes: 0 success; 1 finished, but some cell is invalid or failed, or a regression; \
         2 bad usage or invalid spec (nothing was run); 3 the engine could not be launched, \
         reached or kept alive; 4 storage failure (the history database). `benchspec COMMAND \
         --help` says which apply.",
    );
    cmd.mut_subcommands(
        |sub| match EXIT_CODES.iter().find(|(name, _)| *name == sub.get_name()) {
            // `history`'s subcommands say the same codes as `history`.
            Some((_, codes)) => sub
                .mut_subcommands(|inner| inner.after_help(format!("Exit codes:\n{codes}")))
                .after_help(format!("Exit codes:\n{codes}")),
            None => sub,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_lists_its_exit_codes() {
        let cmd = command();
        for sub in cmd.get_subcommands() {
            let help = sub.get_after_help().map(ToString::to_string);
            assert!(
                help.is_some_and(|h| h.starts_with("Exit codes:\n0  ")),
                "`{}` --help lists no exit codes",
                sub.get_name()
            );
        }
    }

    /// A database failure has its own code (4), not the engine's (3), wherever one can happen:
    /// `run --history` and every `history` command.
    #[test]
    fn storage_failures_exit_4() {
        let cmd = command();
        let help = |sub: &clap::Command| sub.get_after_help().map(ToString::to_string);
        for name in ["run", "history"] {
            let sub = cmd.find_subcommand(name).expect("a command");
            let mut helps = vec![help(sub)];
            helps.extend(sub.get_subcommands().map(help));
            for h in helps {
                let h = h.unwrap_or_default();
                assert!(h.contains("\n4  storage failure"), "`{name}`: {h}");
                assert!(!h.contains("\n3  the database"), "`{name}`: {h}");
            }
        }
        let top = cmd.get_after_help().map(ToString::to_string);
        assert!(top.unwrap_or_default().contains("4 storage failure"));
    }
}
