package taskengine

import (
	"fmt"
	"time"
)

// Config sets the limits of an [Engine]. The zero value is usable; each
// field's default is in its comment. New validates it once.
type Config struct {
	MaxTasks           int           // retained tasks, running + finished; default 10000
	MaxResultBytes     int64         // sum of Outcome.Size over retained tasks; default 256 MiB
	MaxRunningPerOwner int           // default 32
	DefaultTTL         time.Duration // granted when none is requested; default 1h
	MaxTTL             time.Duration // default 24h; negative = unlimited allowed
	MaxRunTime         time.Duration // work deadline; default 10m; negative = none (the TTL still bounds it)
	PollInterval       time.Duration // suggested; default 1s
	MaxPendingInputs   int           // per task; default 4
	MaxWatchersPerTask int           // live subscriptions per task; default 16
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
	switch {
	case c.MaxResultBytes < 0:
		return c, fmt.Errorf("taskengine: Config.MaxResultBytes is negative (%d)", c.MaxResultBytes)
	case c.MaxResultBytes == 0:
		c.MaxResultBytes = DefaultMaxResultBytes
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
	return c, nil
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
