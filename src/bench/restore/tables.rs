//! `bench restore`'s tables: one per question a row answers (what a restore costs next to
//! a prefill, like for like beside llama.cpp's load, from a warm page cache, where a save's
//! time goes).

use super::row::Row;

/// Every table, in the order the README shows them.
pub(super) fn print_all(rows: &[Row]) {
    print_restore_table(rows);
    print_like_for_like_table(rows);
    print_warm_cache_table(rows);
    print_save_table(rows);
}

fn print_restore_table(rows: &[Row]) {
    println!(
        "| tokens | cold prefill s | kvrun snapshot | kvrun save ms | restore ms (fresh process) \
         | read ms | verify ms | assemble ms | load ms | load MB/s | restore + first token ms \
         | speedup vs prefill | incremental save ms | restore MB/s | file read MB/s \
         | llama.cpp file | llama.cpp save ms | llama.cpp save + fsync ms | llama.cpp load ms |"
    );
    println!(
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in rows {
        let first = r.restore.restore_ms + r.restore.first_token_ms;
        // A synthetic session has no prefill to compare with.
        let (prefill, speedup) = match r.prefill_s.is_nan() {
            true => ("–".to_string(), "–".to_string()),
            false => (
                format!("{:.2}", r.prefill_s),
                format!("{:.0}x", r.prefill_s * 1e3 / first.max(1e-9)),
            ),
        };
        println!(
            "| {} | {prefill} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {:.1} | {speedup} \
             | {:.1} | {:.0} | {:.0} | {} | {:.1} | {:.1} | {:.1} |",
            r.tokens,
            crate::format::human_bytes(r.snapshot_bytes),
            r.save_ms,
            r.restore.restore_ms,
            r.restore.phases[0],
            r.restore.phases[1],
            r.restore.phases[2],
            r.restore.phases[3],
            // llama.cpp's state_seq_set_data alone: into device memory, the upload rate.
            r.snapshot_bytes as f64 / 1e6 / (r.restore.phases[3] / 1e3).max(1e-9),
            first,
            r.incremental_save_ms,
            r.snapshot_bytes as f64 / 1e6 / (r.restore.restore_ms / 1e3).max(1e-9),
            r.restore.read_mb_s,
            crate::format::human_bytes(r.llama.bytes),
            r.llama.save_ms,
            r.llama.save_fsync_ms,
            r.restore.llama_load_ms
        );
    }
}

/// kvrun's restore and llama.cpp's load measured the same way, against the disk.
fn print_like_for_like_table(rows: &[Row]) {
    println!(
        "\nRestore like for like (both in this process, into the same fresh context, from a \
         cold page cache):\n"
    );
    println!(
        "| tokens | kvrun restore ms | read ms | CPU ms | llama.cpp load ms | CPU ms \
         | kvrun / llama.cpp | restore MB/s | file read MB/s | restore / file read |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let mb_s =
            r.snapshot_bytes as f64 / 1e6 / (r.restore.in_process_restore_ms / 1e3).max(1e-9);
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}x | {:.0} | {:.0} | {:.2} |",
            r.tokens,
            r.restore.in_process_restore_ms,
            r.restore.in_process_read_ms,
            r.restore.in_process_cpu_ms,
            r.restore.llama_load_ms,
            r.restore.llama_load_cpu_ms,
            r.restore.in_process_restore_ms / r.restore.llama_load_ms.max(1e-9),
            mb_s,
            r.restore.read_mb_s,
            mb_s / r.restore.read_mb_s.max(1e-9)
        );
    }
}

/// The restore and the load with the disk out of the way: the snapshot in the page cache.
fn print_warm_cache_table(rows: &[Row]) {
    println!(
        "\nFrom a warm page cache (the same restore and load with no disk read: the floor this \
         machine's cores and memory set; a disk that reads the snapshot faster than the floor \
         leaves the restore bound by the CPU, kvrun's and llama.cpp's alike; the last column is \
         the best restore / file read ratio that floor allows on this disk):\n"
    );
    println!(
        "| tokens | kvrun restore ms | CPU ms | llama.cpp load ms | kvrun / llama.cpp \
         | page-cache read MB/s | restore MB/s | file read ms (cold) | restore / file read, at most |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let w = &r.restore.warm;
        let mb = r.snapshot_bytes as f64 / 1e6;
        let disk_ms = mb / r.restore.read_mb_s.max(1e-9) * 1e3;
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.2}x | {:.0} | {:.0} | {:.1} | {:.2} |",
            r.tokens,
            w.restore_ms,
            w.restore_cpu_ms,
            w.llama_load_ms,
            w.restore_ms / w.llama_load_ms.max(1e-9),
            w.read_mb_s,
            mb / (w.restore_ms / 1e3).max(1e-9),
            disk_ms,
            // A cold restore takes at least the longer of the two.
            (disk_ms / w.restore_ms.max(1e-9)).min(1.0)
        );
    }
}

/// Where the full save's time went, next to llama.cpp's durable save of the same sequence.
fn print_save_table(rows: &[Row]) {
    println!(
        "\nFull save phases (hash, write and fsync are summed over the writer threads; \
         objects is their wall time; the pages stored in the background while the prefill \
         ran are not part of the save; the engine thread captures and slices, the rest \
         runs on the session's writer thread, queued behind those pages):\n"
    );
    println!(
        "| tokens | kvrun save ms | engine thread ms | queued ms | capture ms | parse ms | slice ms | queue wait ms \
         | hash ms | write ms | fsync ms | objects ms | dir fsync ms | manifest ms \
         | cleanup ms | objects | MB written | stored during prefill | llama.cpp file MB \
         | llama.cpp save + fsync ms | ratio |"
    );
    println!(
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:\
         |---:|---:|---:|---:|"
    );
    for r in rows {
        let p = &r.save.phases;
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} \
             | {:.1} | {:.1} | {:.1} | {:.1} | {} | {:.1} | {} objects, {:.1} MB | {:.1} \
             | {:.1} | {:.2}x |",
            r.tokens,
            r.save_ms,
            p.plan_ms,
            p.queue_ms,
            p.capture_ms,
            p.parse_ms,
            p.slice_ms,
            p.queue_wait_ms,
            p.hash_ms,
            p.write_ms,
            p.fsync_ms,
            p.objects_ms,
            p.dir_fsync_ms,
            p.manifest_ms,
            p.cleanup_ms,
            r.save.objects,
            r.save.bytes as f64 / 1e6,
            r.save.early_objects,
            r.save.early_bytes as f64 / 1e6,
            r.llama.bytes as f64 / 1e6,
            r.llama.save_fsync_ms,
            r.save_ms / r.llama.save_fsync_ms.max(1e-9)
        );
    }
}
