package plugins

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"
)

// Defaults of [Config] fields left at their zero value.
const (
	DefaultMaxModuleBytes = 64 << 20 // 64 MiB
	DefaultMaxModules     = 1024
	DefaultDebounce       = 250 * time.Millisecond
	DefaultMaxDelay       = 5 * time.Second
	DefaultRetryInterval  = 2 * time.Second
)

// Errors reported by this package. Problems in a [Snapshot] and errors
// returned by functions wrap one of these; branch with [errors.Is].
var (
	ErrConfig         = errors.New("invalid config")
	ErrNoDir          = errors.New("module directory does not exist")
	ErrNotDir         = errors.New("module directory is not a directory")
	ErrTooLarge       = errors.New("module file too large")
	ErrTooMany        = errors.New("too many module files")
	ErrNotRegular     = errors.New("module file is not a regular file")
	ErrBadName        = errors.New("invalid module name")
	ErrUnreadable     = errors.New("cannot read module file or directory")
	ErrDigestMismatch = errors.New("module file changed since it was scanned")
	ErrUnstable       = errors.New("module file is still being written")
	ErrWatch          = errors.New("cannot watch the module directory")
)

// Config says which directory holds the tool modules and how it is read and
// watched. The zero value of every field but Dir is a safe default. A Config
// is copied by [Scan] and [NewWatcher]; changing it afterwards has no effect.
type Config struct {
	// Dir is the directory of tool modules: one "<name>.wasm" file per module,
	// flat (subdirectories are ignored). It may be relative (made absolute
	// once, at construction) and may be a symbolic link. It must be a
	// readable directory when [Scan] or [NewWatcher] is called; a Watcher
	// then follows it as it is deleted, created again or retargeted.
	// Required.
	Dir string

	// MaxModuleBytes is the largest module file that is read; a larger file is
	// reported as a problem ([ErrTooLarge]) and not loaded.
	// Default DefaultMaxModuleBytes (64 MiB).
	MaxModuleBytes int64

	// MaxModules bounds the number of modules in a snapshot. When the
	// directory holds more candidate files, the first MaxModules in name order
	// are kept and one [ErrTooMany] problem reports the rest.
	// Default DefaultMaxModules (1024).
	MaxModules int

	// Debounce is the quiet time the watcher waits after the last change
	// before it rescans, and the minimum age of a file's modification time
	// for it to count as completely written. NewWatcher waits up to four
	// times Debounce, and never more than 2s, for files still being
	// written at start. Default DefaultDebounce (250ms).
	Debounce time.Duration

	// MaxDelay bounds how long a stream of changes that never goes quiet can
	// postpone a rescan. Files still being written at that point are not
	// loaded (their previous version, if any, stays). Default
	// DefaultMaxDelay (5s); it is raised to Debounce if smaller.
	MaxDelay time.Duration

	// RetryInterval is how often the watcher retries when it cannot watch
	// the directory or its parent (the parent does not exist, or the inotify
	// watch limit is reached): it then rescans on this period instead.
	// Default DefaultRetryInterval (2s).
	RetryInterval time.Duration

	// Logger receives transient errors (fsnotify errors and queue overflows,
	// files that are still being written). Default: discard.
	Logger *slog.Logger

	// Source names where the modules come from ([Module].Source): [Loads]
	// serves the modules of different sources in turn, so that one
	// source's slow or failing modules delay another source's by at most
	// one load. Default: Dir, made absolute (for [ScanFS], "").
	Source string
}

// withDefaults validates c and returns a copy with defaults filled in and
// Dir made absolute and clean.
func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		return c, fmt.Errorf("%w: Dir is empty", ErrConfig)
	}
	abs, err := filepath.Abs(c.Dir)
	if err != nil {
		return c, fmt.Errorf("%w: Dir %q: %v", ErrConfig, c.Dir, err)
	}
	c.Dir = abs
	if c.Source == "" {
		c.Source = abs
	}
	if c.MaxModuleBytes < 0 || c.MaxModules < 0 || c.Debounce < 0 || c.MaxDelay < 0 || c.RetryInterval < 0 {
		return c, fmt.Errorf("%w: negative limit", ErrConfig)
	}
	if c.MaxModuleBytes == 0 {
		c.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if c.MaxModules == 0 {
		c.MaxModules = DefaultMaxModules
	}
	if c.Debounce == 0 {
		c.Debounce = DefaultDebounce
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.MaxDelay < c.Debounce {
		c.MaxDelay = c.Debounce
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = DefaultRetryInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// maxStartWait bounds how long NewWatcher waits for files still being
// written at start.
const maxStartWait = 2 * time.Second

// startWait is how long NewWatcher waits for files still being written at
// start: four settle periods, at most maxStartWait. A file that settled
// just before start needs at most one.
func (c Config) startWait() time.Duration {
	return min(4*c.Debounce, maxStartWait)
}
