//! `servesim recommend CONFIG.yaml`: the search of `servesim_sim::predict::search`, its
//! candidates run on threads, its answer written as files.

use crate::{print, read};
use servesim_sim::SimError;
use servesim_sim::predict::search::Trial;
use servesim_sim::predict::{self, Outcome, PathFiles, Search, yaml};
use std::path::Path;
use std::time::Instant;

/// Timestamps between checks for a hopeless run (and for the timeout).
const CHECK_EVERY: usize = 4096;

pub fn run(
    config: &Path,
    sets: &[String],
    jobs: Option<usize>,
    shard: Option<(usize, usize)>,
    out: &Path,
    overwrite: bool,
    format: &str,
) -> Result<(), SimError> {
    let text = read(config)?;
    let src = config.display().to_string();
    let rec = predict::recommend(&text, &src, sets)?;
    let (shard, shards) = shard.unwrap_or((0, 1));
    if shards > 1 && !rec.is_exhaustive() && !rec.settings.random {
        return Err(SimError::new(format!(
            "--shard: {src} searches with a model that learns from every result (optimizer.algorithm bayesian over a space larger than max_trials); run it on one machine with --jobs, or set optimizer.algorithm: random to shard it"
        )));
    }
    prepare(out, overwrite)?;
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let jobs = jobs.unwrap_or(rec.settings.parallelism.min(cores)).max(1);
    let timeout = rec.settings.candidate_timeout_s;
    let mut search = Search::new(rec);
    loop {
        let batch = search.next_batch(jobs * shards);
        if batch.is_empty() {
            break;
        }
        let mine: Vec<_> = batch.into_iter().filter(|c| c.id % shards == shard).collect();
        let outcomes: Vec<(usize, Outcome)> = std::thread::scope(|scope| {
            let search = &search;
            let handles: Vec<_> = mine
                .iter()
                .map(|c| {
                    let config = config.to_path_buf();
                    scope.spawn(move || {
                        let mut files = PathFiles::beside(&config).with_kernels(crate::kernel_dir());
                        let outcome = match predict::map_candidate(search, c, &mut files) {
                            Err(o) => o,
                            Ok(m) => match search.precheck(m.gpus) {
                                Some(o) => o,
                                None => {
                                    let start = Instant::now();
                                    let mut keep_going = || {
                                        if start.elapsed().as_secs_f64() > timeout {
                                            Err(format!("timed out after optimizer.candidate_timeout_seconds {timeout}"))
                                        } else {
                                            Ok(())
                                        }
                                    };
                                    predict::run_candidate(&m, &mut files, CHECK_EVERY, &mut keep_going)
                                        .unwrap_or_else(|e| Outcome::Infeasible { gpus: Some(m.gpus), reason: e.0 })
                                }
                            },
                        };
                        (c.id, outcome)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a candidate thread does not panic")).collect()
        });
        for (id, o) in outcomes {
            search.tell(id, o);
        }
        // Candidates of other shards are not this machine's: recorded as such, left out of
        // what it writes.
        for id in 0..search.trials.len() {
            if search.trials[id].is_none() && id % shards != shard {
                search.tell(id, Outcome::Skipped { gpus: 0, reason: format!("run by shard {}/{shards}", id % shards) });
            }
        }
    }
    if shards > 1 {
        search.trials.iter_mut().enumerate().for_each(|(id, t)| {
            if id % shards != shard {
                *t = None;
            }
        });
    }
    write(&search, out)?;
    let ranking = search.ranking();
    if ranking.is_empty() {
        let _ = print(|w| writeln!(w, "no feasible candidate: see {}", out.join("recommendation.csv").display()));
        return Err(SimError::new(format!(
            "{src}: no candidate is feasible ({} tried); the ledger says why",
            search.trials.iter().flatten().count()
        )));
    }
    let rows: Vec<serde_json::Value> = ranking
        .iter()
        .enumerate()
        .map(|(r, t)| serde_json::json!({"rank": r + 1, "score": t.score, "gpus": gpus(t), "candidate": t.candidate.id, "path": out.join("recommendations").join(format!("{:04}.yaml", r + 1)).display().to_string()}))
        .collect();
    if format == "json" {
        return print(|w| writeln!(w, "{}", serde_json::Value::Array(rows)));
    }
    print(|w| {
        writeln!(w, "{:>4} {:>14} {:>5}  path", "rank", "score", "gpus")?;
        for r in &rows {
            writeln!(
                w,
                "{:>4} {:>14.4} {:>5}  {}",
                r["rank"],
                r["score"].as_f64().unwrap_or(f64::NAN),
                r["gpus"],
                r["path"].as_str().unwrap_or("")
            )?;
        }
        let best = ranking[0];
        writeln!(w, "best: {}", best.candidate.set.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "))
    })
}

fn gpus(t: &Trial) -> Option<u32> {
    match &t.outcome {
        Outcome::Ran { gpus, .. } => Some(*gpus),
        _ => None,
    }
}

/// The output directory: new, empty, or (with `--overwrite`) one whose known files go.
fn prepare(out: &Path, overwrite: bool) -> Result<(), SimError> {
    let io = |e: std::io::Error| SimError::new(format!("{}: {e}", out.display()));
    if out.exists() && std::fs::read_dir(out).map_err(io)?.next().is_some() {
        if !overwrite {
            return Err(SimError::new(format!(
                "{}: the output directory is not empty (use --overwrite to replace its recommendations)",
                out.display()
            )));
        }
        for f in ["recommendation.json", "recommendation.csv"] {
            let _ = std::fs::remove_file(out.join(f));
        }
        if let Ok(entries) = std::fs::read_dir(out.join("recommendations")) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if name.len() == 9 && name.ends_with(".yaml") && name[..4].bytes().all(|b| b.is_ascii_digit()) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
    std::fs::create_dir_all(out.join("recommendations")).map_err(io)
}

fn write(search: &Search, out: &Path) -> Result<(), SimError> {
    let io = |p: &Path, e: std::io::Error| SimError::new(format!("{}: {e}", p.display()));
    for (r, t) in search.ranking().iter().enumerate() {
        let path = out.join("recommendations").join(format!("{:04}.yaml", r + 1));
        let head = format!(
            "# servesim recommend: rank {}, {} {:.6}, {} GPUs (candidate {})\n",
            r + 1,
            search.rec.settings.target.name(),
            t.score.unwrap_or(f64::NAN),
            gpus(t).unwrap_or(0),
            t.candidate.id
        );
        std::fs::write(&path, head + &yaml::emit(&t.candidate.doc.to_json())).map_err(|e| io(&path, e))?;
    }
    let json = out.join("recommendation.json");
    std::fs::write(&json, serde_json::to_string_pretty(&search.ledger()).unwrap_or_default() + "\n").map_err(|e| io(&json, e))?;
    let csv = out.join("recommendation.csv");
    std::fs::write(&csv, search.ledger_csv()).map_err(|e| io(&csv, e))
}
