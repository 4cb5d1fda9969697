// Package plugins finds the tool modules in a directory and keeps an
// immutable, content-addressed picture of them up to date while the
// directory changes.
//
// It owns: which files are tool modules (one "<name>.wasm" per module, in a
// flat directory), reading them with content digests in the product's one
// form ([Digest]: "sha256:" and 64 hex digits), limits on their size and
// number, immutable [Snapshot] values, and a debounced fsnotify [Watcher]
// that follows the directory as it is emptied, deleted, created again or
// switched through a symbolic link.
//
// It does not own compiling or running modules: that needs the Wasm
// runtime, which this package does not import. [Build] turns a snapshot into
// a [Generation] (the modules and tools the host serves) through a small
// [Loader] interface the host implements: the host compiles a module, runs
// it once and decodes its manifest with [abi.DecodeManifest], once. Build
// takes that manifest as it is, reuses compiled modules by [Module.Digest]
// (an unchanged or renamed file is never compiled twice), keeps the
// previous version of a module whose new version fails, and gives each tool
// name to one module by the operator's [Rules]: a bound name to its module,
// a name a module served to that module while its file is there and for a
// grace period after it left, the rest to modules already serving, then in
// name order; a module refused gets a [*ConflictError] naming both files.
// Swapping the *Generation pointer and draining the old generation's calls
// before releasing its compiled modules are the host's. Wrapped in
// [Loads], the Loader runs in the background (two workers, each load within
// a deadline, one queue per [Module].Source served in turn; within a
// source, modules the rules know first, then those that never failed,
// smallest file first) and Build never waits: a module still loading is a
// problem wrapping [ErrLoading], and [Loads.Finished] says when to build
// again, so a slow module delays only itself, and one source's modules
// delay another's by at most one load. A content that failed to load is
// not loaded again until it changes.
// The package imports only the standard library, package abi and fsnotify.
//
// A minimal use:
//
//	w, err := plugins.NewWatcher(plugins.Config{Dir: "/srv/tools"})
//	if err != nil { ... } // among others, the directory does not exist
//	defer w.Close()
//	var gen *plugins.Generation[*compiled] // host's compiled-module type
//	for snap := range w.Changes() {
//		next, released := plugins.Build(ctx, gen, snap, loader)
//		for _, p := range next.Problems() { log(p) }
//		serving.Store(next) // the swap
//		// … once calls in flight on gen end, release each of released …
//		gen = next
//	}
//
// # Which files
//
// A file is a candidate when its name ends in ".wasm" and does not start
// with a dot; editor and copy temporaries such as ".x.wasm.swp", "x.wasm~"
// or "x.wasm.tmp" are not, and their events cause no rescan. A candidate
// whose name is not 1-128 of A-Z a-z 0-9 _ . - (starting with a letter or
// digit) is a problem ([ErrBadName]). Symbolic links to files are followed
// when a scan runs, but only the directory is watched: a change to a link's
// target outside it is seen at the next rescan, not by itself. Files larger
// than [Config.MaxModuleBytes] are problems ([ErrTooLarge]); beyond
// [Config.MaxModules] candidates, the rest are one [ErrTooMany] problem.
// Subdirectories are ignored: see "Why a flat directory?" in RATIONALE.md.
// A file that is empty or not Wasm at all is still in the snapshot: whether
// it is a valid module is for the host to say.
//
// # Half-written files
//
// A file is loaded only when it is settled: its modification time is at
// least [Config.Debounce] old, and two stats (before and after reading it)
// agree on identity, size and modification time and on the number of bytes
// read. A file that is not settled keeps what the previous snapshot said
// about it (its entry or its problem, if any) and is looked at again later;
// it causes no delivery by itself. A writer that pauses for longer than
// Debounce in the middle of a file can still be seen half-way; writers
// should write a temporary file and rename it into place, which is always
// safe.
//
// At start there is no previous snapshot, so [NewWatcher] waits for files
// still being written, for at most four times Debounce and never more than
// 2 s; a file still unsettled then is an [ErrUnstable] problem of the first
// snapshot rather than missing from it without a word. [Scan] does not
// wait: a file that changes while it is read is an ErrUnstable problem.
//
// # Watching
//
// The directory must be readable when [Scan] or [NewWatcher] is called: one
// that does not exist, is not a directory or cannot be read is an error
// ([ErrNoDir], [ErrNotDir], [ErrUnreadable]). Once watching, the Watcher
// watches the directory's parent (for the directory entry itself: deleted,
// created again, renamed, or a symbolic link switched to another release by
// renaming a new link over it) and the resolved directory (for its files);
// a directory that disappears is a problem of the later snapshots until it
// comes back. After each burst of relevant events the Watcher waits until
// no event came for [Config.Debounce] (but no longer than
// [Config.MaxDelay] after the burst began), re-resolves the directory,
// re-adds watches that changed, and rescans. An fsnotify error or queue
// overflow is logged and causes a rescan. When a watch cannot be set (the
// parent was deleted, the inotify limit is reached) the snapshot carries an
// [ErrWatch] problem and the Watcher rescans every [Config.RetryInterval]
// until it can. A rescan reads only files whose identity, size or
// modification time changed.
//
// # Concurrency and lifecycle
//
// [NewWatcher] takes the first snapshot (waiting, bounded, for files being
// written) and starts one goroutine, which owns all mutable state;
// [Watcher.Close] stops it, waits for it, closes the fsnotify watcher and
// then the [Watcher.Changes] channel. Changes has capacity one and
// coalesces: the goroutine replaces a snapshot the consumer has not
// received yet with the newer one, so it never blocks and nothing queues
// up. Snapshots and Modules are immutable values, safe to share. [Scan]
// and [ScanFS] are one-shot scans with no goroutine. [Build] starts no
// goroutine and calls a plain [Loader] from the caller's goroutine, one
// module at a time; [Loads] owns its workers, which [Loads.Close] stops, and
// its queue holds at most the modules of the snapshots it was asked for
// ([Loads.Keep] forgets the rest); a [Generation] is immutable and safe for concurrent use, so
// the host can publish it with one atomic pointer store. Everything a
// Generation or the Watcher remembers (digest cache, failed digests, the
// tool names modules hold) is bounded by [Config.MaxModules] entries, plus
// at most 1,024 modules whose files left within the grace period; what
// Loads remembers of failed contents by [LoadConfig].MaxFailed.
package plugins
