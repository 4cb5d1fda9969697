// Package compilecache is the compile cache on disk: one file per module
// content (the instrumented bytes), named by its digest, holding what
// wazero's file cache wrote for that module alone, authenticated with the
// server's key (entry.go). Owning a file per module is what lets the host bound the
// cache, evict it least recently used first, and refuse an entry, none of
// which wazero's own file cache does: its file names are keyed by values
// internal to wazero, it never deletes anything, it reads whatever it finds
// at a name (a named pipe blocks the compile, forged native code runs), and
// a corrupt entry fails the compile.
//
// wazero is never pointed at the shared directory. Each compile gets a
// private directory of its own (a Stage): the module's entry is read there
// into memory, checked, and its files written to that directory, which
// wazero's cache is given; after the compile, what wazero wrote there is
// authenticated and published into the shared directory by rename. What
// wazero opens is therefore only ever bytes this process checked and wrote
// itself, in a directory no one else can write.
//
// Several servers may share the directory: entries are written by rename,
// a reader keeps a file it opened even when another server evicts it, and
// every entry is checked by whoever reads it. Servers that share it share
// the key, or each refuses (and replaces) the others' entries.
//
// One compile uses it so:
//
//	s := cache.Stage(name, wasm) // nil: compile without the disk
//	defer s.Close()
//	// compile with wazero.NewCompilationCacheWithDir(s.Dir())
//	// success: s.Publish(); an error with Fault(err): s.Drop(), then
//	// compile again in memory (a cache never refuses a module)
//
// The package knows wazero's file cache only as a directory it is given and
// files it writes; it never imports wazero (the runtime room does), so its
// checks are plain file and MAC work, tested with wazero as the oracle.
package compilecache
