package taskengine

import (
	"fmt"
	"time"
)

// Config sets the limits of an [Engine]. The zero value is usable; each
// field's default is in its comment. New validates it once.
type Config struct {
	MaxTasks               int           // retained tasks, running + finished; default 10000
	MaxResultBytes         int64         // sum of Outcome.Size over retained tasks; default 256 MiB
	MaxRunningPerOwner     int           // running tasks of one owner; default 32
	MaxTasksPerOwner       int           // retained tasks of one owner, running + finished; default MaxTasks/4, at least 1
	MaxResultBytesPerOwner int64         // sum of Outcome.Size over one owner's retained tasks; default MaxResultBytes/4, at least 1
	DefaultTTL             time.Duration // granted when none is requested; default 1h
	MaxTTL                 time.Duration // default 24h; negative = unlimited allowed
	MaxRunTime             time.Duration // work deadline; default 10m; negative = none (the TTL still bounds it)
	PollInterval           time.Duration // suggested; default 1s
	MaxPendingInputs       int           // per task; default 4
	MaxWatchersPerTask     int           // live subscriptions per task; default 16

	// Limits, if set, gives an owner its own bounds (a tenant's quotas, say)
	// in place of MaxRunningPerOwner, MaxTasksPerOwner and
	// MaxResultBytesPerOwner; a zero (or negative) field of its result means
	// the Config default for that owner. The engine calls it while holding
	// its lock, at every Submit and every time a task's work returns, so it
	// must be fast, must not block, must not panic, and must not call the
	// engine. It may return different bounds over time: an owner above a
	// lowered bound is brought under it by evicting its own finished tasks,
	// for the task count at its next Submit, for the bytes when its next
	// task finishes.
	Limits func(owner string) OwnerLimits

	// Shared, if set, is a store of task records this engine shares with
	// the other replicas of the server: every task is recorded there, and
	// the engine answers for the tasks of other replicas from it (see
	// "Replicas" in the package documentation). Peers, Codec and
	// SharedKey are then required.
	Shared SharedStore
	// Peers is the control channel to the other replicas sharing Shared.
	Peers Peers
	// Codec encodes the opaque values of tasks for Shared.
	Codec Codec
	// SharedKey (at least 32 bytes, the same on every replica) keys List
	// cursors, so that a cursor from one replica pages on another.
	SharedKey []byte
	// SharedTimeout caps each call into Shared and Peers (a caller's
	// context may end it sooner); default 10s.
	SharedTimeout time.Duration
	// LivenessCheck is how often a waiter on another replica's task checks
	// that the replica still holds its lease; default 2s.
	LivenessCheck time.Duration
}

// OwnerLimits are one owner's bounds, as [Config.Limits] returns them. A
// zero (or negative) field means the Config default named in its comment.
// The engine-wide MaxTasks and MaxResultBytes hold as well, whatever an
// owner's own bounds are.
type OwnerLimits struct {
	MaxRunning     int   // running tasks; default Config.MaxRunningPerOwner
	MaxTasks       int   // retained tasks, running + finished; default Config.MaxTasksPerOwner
	MaxResultBytes int64 // sum of Outcome.Size over retained tasks; default Config.MaxResultBytesPerOwner
}

// Defaults.
const (
	DefaultMaxTasks           = 10000
	DefaultMaxResultBytes     = 256 << 20
	DefaultMaxRunningPerOwner = 32
	DefaultDefaultTTL         = time.Hour
	DefaultMaxTTL             = 24 * time.Hour
	DefaultMaxRunTime         = 10 * time.Minute
	DefaultPollInterval       = time.Second
	DefaultMaxPendingInputs   = 4
	DefaultMaxWatchersPerTask = 16
	DefaultSharedTimeout      = 10 * time.Second
	DefaultLivenessCheck      = 2 * time.Second
)

// withDefaults fills zero fields and rejects impossible values.
func (c Config) withDefaults() (Config, error) {
	setInt := func(p *int, def int, name string) error {
		if *p < 0 {
			return fmt.Errorf("taskengine: Config.%s is negative (%d)", name, *p)
		}
		if *p == 0 {
			*p = def
		}
		return nil
	}
	for _, f := range []struct {
		p    *int
		def  int
		name string
	}{
		{&c.MaxTasks, DefaultMaxTasks, "MaxTasks"},
		{&c.MaxRunningPerOwner, DefaultMaxRunningPerOwner, "MaxRunningPerOwner"},
		{&c.MaxPendingInputs, DefaultMaxPendingInputs, "MaxPendingInputs"},
		{&c.MaxWatchersPerTask, DefaultMaxWatchersPerTask, "MaxWatchersPerTask"},
	} {
		if err := setInt(f.p, f.def, f.name); err != nil {
			return c, err
		}
	}
	// After the loop: the default derives from MaxTasks' own.
	if err := setInt(&c.MaxTasksPerOwner, max(c.MaxTasks/4, 1), "MaxTasksPerOwner"); err != nil {
		return c, err
	}
	switch {
	case c.MaxResultBytes < 0:
		return c, fmt.Errorf("taskengine: Config.MaxResultBytes is negative (%d)", c.MaxResultBytes)
	case c.MaxResultBytes == 0:
		c.MaxResultBytes = DefaultMaxResultBytes
	}
	switch {
	case c.MaxResultBytesPerOwner < 0:
		return c, fmt.Errorf("taskengine: Config.MaxResultBytesPerOwner is negative (%d)", c.MaxResultBytesPerOwner)
	case c.MaxResultBytesPerOwner == 0:
		c.MaxResultBytesPerOwner = max(c.MaxResultBytes/4, 1)
	}
	if c.MaxTTL == 0 {
		c.MaxTTL = DefaultMaxTTL
	}
	switch {
	case c.DefaultTTL < 0:
		return c, fmt.Errorf("taskengine: Config.DefaultTTL is negative (%v)", c.DefaultTTL)
	case c.DefaultTTL == 0:
		c.DefaultTTL = min(DefaultDefaultTTL, c.maxTTL())
	case c.DefaultTTL > c.maxTTL():
		return c, fmt.Errorf("taskengine: Config.DefaultTTL %v exceeds MaxTTL %v", c.DefaultTTL, c.MaxTTL)
	}
	if c.MaxRunTime == 0 {
		c.MaxRunTime = DefaultMaxRunTime
	}
	switch {
	case c.PollInterval < 0:
		return c, fmt.Errorf("taskengine: Config.PollInterval is negative (%v)", c.PollInterval)
	case c.PollInterval == 0:
		c.PollInterval = DefaultPollInterval
	}
	if c.Shared != nil {
		switch {
		case c.Peers == nil:
			return c, fmt.Errorf("taskengine: Config.Shared needs Peers")
		case c.Codec == nil:
			return c, fmt.Errorf("taskengine: Config.Shared needs a Codec")
		case len(c.SharedKey) < 32:
			return c, fmt.Errorf("taskengine: Config.SharedKey has %d bytes, want at least 32", len(c.SharedKey))
		}
	}
	if c.Peers != nil && c.Shared == nil {
		return c, fmt.Errorf("taskengine: Config.Peers needs a Shared store")
	}
	if c.SharedTimeout <= 0 {
		c.SharedTimeout = DefaultSharedTimeout
	}
	if c.LivenessCheck <= 0 {
		c.LivenessCheck = DefaultLivenessCheck
	}
	return c, nil
}

// ownerLimits returns owner's bounds: what Limits gives, with the Config
// defaults in place of zero fields. The engine calls it under its lock.
func (c Config) ownerLimits(owner string) OwnerLimits {
	var l OwnerLimits
	if c.Limits != nil {
		l = c.Limits(owner)
	}
	if l.MaxRunning <= 0 {
		l.MaxRunning = c.MaxRunningPerOwner
	}
	if l.MaxTasks <= 0 {
		l.MaxTasks = c.MaxTasksPerOwner
	}
	if l.MaxResultBytes <= 0 {
		l.MaxResultBytes = c.MaxResultBytesPerOwner
	}
	return l
}

// maxTTL is MaxTTL with "unlimited" as the largest duration.
func (c Config) maxTTL() time.Duration {
	if c.MaxTTL < 0 {
		return time.Duration(1<<63 - 1)
	}
	return c.MaxTTL
}

// grantTTL turns a requested TTL into the granted one (0 = unlimited):
// 0 asks for DefaultTTL, a negative request asks for unlimited, and anything
// is clamped to MaxTTL.
func (c Config) grantTTL(requested time.Duration) time.Duration {
	switch {
	case requested == 0:
		return c.DefaultTTL
	case requested < 0:
		if c.MaxTTL < 0 {
			return 0
		}
		return c.MaxTTL
	default:
		return min(requested, c.maxTTL())
	}
}

// runTime is how long work may run given the granted TTL (0 = unlimited):
// min(MaxRunTime, TTL); 0 means no deadline.
func (c Config) runTime(ttl time.Duration) time.Duration {
	switch {
	case c.MaxRunTime < 0:
		return ttl
	case ttl == 0:
		return c.MaxRunTime
	default:
		return min(c.MaxRunTime, ttl)
	}
}
