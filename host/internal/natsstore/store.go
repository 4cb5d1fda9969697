package natsstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmtask/wasmtask/taskengine"
)

// Config says where the store is and how it is protected.
type Config struct {
	// URL of the NATS servers (nats://host:4222, comma-separated for
	// several). Empty: an embedded server, in this process, keeps the
	// store in Dir.
	URL string
	// Dir is the embedded server's directory (with URL empty).
	Dir string
	// Keys encrypt everything written and name records (required).
	Keys *Keys
	// Prefix names the buckets and subjects; default "wasmtask". Servers
	// that share tasks use the same prefix.
	Prefix string
	// LeaseTTL is how long a replica that stopped renewing its lease is
	// still taken as alive; default 6s. It is renewed every LeaseTTL/3.
	LeaseTTL time.Duration
	// Replicas is the JetStream replication of the buckets. Zero: the
	// cluster's size up to 3 (1 on a server without a cluster, and for
	// the embedded store). A bucket that has more keeps them; one that has
	// fewer is raised, and Open fails if it cannot be.
	Replicas int
	// Log receives the store's own events: the buckets' replication at
	// start, the store lost and back. Nil: none.
	Log *slog.Logger
	// MaxBytes bounds the tasks bucket; default 4 GiB. Past it, new tasks
	// are refused (each replica's own bounds keep every owner's share).
	MaxBytes int64
}

// Store is a taskengine.SharedStore and taskengine.Peers on NATS JetStream.
// Open it, hand it to the
// engine, and Close it after the engine.
// embeddedServer is the NATS server a store on a directory runs in
// process (embedded.go); a build with the tag wasmtask_noembed has none.
type embeddedServer interface {
	nats.InProcessConnProvider
	Shutdown()
	WaitForShutdown()
}

type Store struct {
	cfg     Config
	replica string
	srv     embeddedServer // or nil
	nc      *nats.Conn
	js      jetstream.JetStream
	tasks   jetstream.KeyValue
	leases  jetstream.KeyValue
	health  health
	paused  atomic.Bool // tests: renew no lease, as a stopped process does

	stop    chan struct{}
	wg      sync.WaitGroup
	serving chan struct{} // semaphore: control requests in flight

	mu  sync.Mutex
	sub *nats.Subscription
}

// Bounds.
const (
	maxInline      = 4 << 10   // outcome bytes kept in the record itself; more go in chunks, read only when asked
	chunkSize      = 256 << 10 // outcome bytes per chunk beyond that
	maxChunks      = 1024      // 256 MiB: the engine's default result bound
	maxControls    = 16        // control requests served at once
	maxRecordBytes = 1 << 20   // a record value larger than this is refused
)

// Open connects to (or starts) the store, creates its buckets if needed,
// and takes this process's lease.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Keys == nil {
		return nil, errors.New("task store: no keys")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "wasmtask"
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 6 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 4 << 30
	}
	s := &Store{cfg: cfg, replica: rand.Text(), stop: make(chan struct{}), serving: make(chan struct{}, maxControls)}
	opts := []nats.Option{nats.Name("wasmtask " + s.replica), nats.MaxReconnects(-1)}
	url := cfg.URL
	if url == "" {
		if cfg.Dir == "" {
			return nil, errors.New("task store: neither a URL nor a directory")
		}
		srv, err := startEmbedded(cfg.Dir)
		if err != nil {
			return nil, err
		}
		s.srv = srv
		opts = append(opts, nats.InProcessServer(srv))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		s.shutdownServer()
		return nil, fmt.Errorf("task store: connect: %w", err)
	}
	s.nc = nc
	if s.cfg.Replicas <= 0 {
		s.cfg.Replicas = clusterReplicas(nc)
	}
	if err := s.setupRetrying(ctx); err != nil {
		nc.Close()
		s.shutdownServer()
		return nil, err
	}
	s.health.log, s.health.heldFor, s.health.renewed = s.cfg.Log, s.heldFor(), time.Now() // setup took the lease
	s.wg.Go(s.renewLease)
	return s, nil
}

// clusterReplicas is the default replication on the servers nc reached:
// their cluster's size (the servers it told the client about), at most 3;
// 1 without a cluster.
func clusterReplicas(nc *nats.Conn) int {
	if nc.ConnectedClusterName() == "" {
		return 1
	}
	return min(3, max(1, len(nc.Servers())))
}

// Bounds of setupRetrying: replicas that start together on a fresh
// cluster race to create the buckets, and a bucket just created has no
// leader for a moment; each waits and tries again.
const (
	setupTries    = 8
	setupBackoff  = 100 * time.Millisecond // doubled after each try
	setupMaxPause = 2 * time.Second
)

func (s *Store) setupRetrying(ctx context.Context) error {
	pause := setupBackoff
	for try := 1; ; try++ {
		err := s.setup(ctx)
		if err == nil || try == setupTries || errors.Is(err, ErrKeys) {
			return err
		}
		s.cfg.Log.Debug("task store: setting up, trying again", "err", err, "try", try)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, setupMaxPause)
	}
}

// errReplication: a bucket cannot have the replication asked for.
var errReplication = errors.New("task store: replication")

func (s *Store) setup(ctx context.Context) error {
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("task store: %w", err)
	}
	s.js = js
	s.tasks, err = s.bucket(ctx, jetstream.KeyValueConfig{
		Bucket:         s.cfg.Prefix + "_tasks",
		Description:    "wasmtask task records and results (encrypted)",
		History:        1,
		MaxValueSize:   maxRecordBytes + 1024,
		LimitMarkerTTL: time.Minute, // per-key TTLs: each record expires with its task
		MaxBytes:       s.cfg.MaxBytes,
		Replicas:       s.cfg.Replicas,
		Storage:        jetstream.FileStorage,
	})
	if err != nil {
		return err
	}
	s.leases, err = s.bucket(ctx, jetstream.KeyValueConfig{
		Bucket:      s.cfg.Prefix + "_leases",
		Description: "wasmtask replica leases",
		History:     1,
		TTL:         s.cfg.LeaseTTL,
		Replicas:    s.cfg.Replicas,
		// On disk: a NATS restart must not erase every lease at once
		// (every running task would then look lost).
		Storage: jetstream.FileStorage,
	})
	if err != nil {
		return err
	}
	if err := s.checkKeys(ctx); err != nil {
		return err
	}
	if _, err := s.leases.Put(ctx, s.replica, s.leaseValue()); err != nil {
		return fmt.Errorf("task store: lease: %w", err)
	}
	return nil
}

// leaseValue is this replica's lease: the keys it reads.
func (s *Store) leaseValue() []byte {
	b, _ := json.Marshal(leaseValue{Reads: s.cfg.Keys.ids()})
	return b
}

// bucket creates the key-value bucket cfg describes, or updates it to cfg
// when it exists, never lowering its replication: an operator who raised
// it keeps it. A bucket left with fewer replicas than asked is an error
// (errReplication).
func (s *Store) bucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := s.js.KeyValue(ctx, cfg.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		kv, err = s.js.CreateKeyValue(ctx, cfg)
		if err == nil {
			s.cfg.Log.Info("task store: bucket created", "bucket", cfg.Bucket, "replicas", cfg.Replicas)
		}
	case err == nil:
		var have int
		if have, err = bucketReplicas(ctx, kv); err != nil {
			return nil, err
		}
		if have > cfg.Replicas {
			s.cfg.Log.Info("task store: bucket keeps its replication, more than asked", "bucket", cfg.Bucket, "replicas", have, "asked", cfg.Replicas)
			cfg.Replicas = have
		} else if have < cfg.Replicas {
			s.cfg.Log.Warn("task store: raising the bucket's replication", "bucket", cfg.Bucket, "replicas", have, "asked", cfg.Replicas)
		}
		kv, err = s.js.UpdateKeyValue(ctx, cfg)
	}
	if err != nil {
		if replicationRefused(err) {
			return nil, fmt.Errorf("%w: bucket %s with %d replicas: %w (set the store's replicas to the cluster's size or less)", errReplication, cfg.Bucket, cfg.Replicas, err)
		}
		return nil, fmt.Errorf("task store: bucket %s: %w", cfg.Bucket, err)
	}
	have, err := bucketReplicas(ctx, kv)
	if err != nil {
		return nil, err
	}
	if have < cfg.Replicas {
		return nil, fmt.Errorf("%w: bucket %s has %d replicas, %d asked", errReplication, cfg.Bucket, have, cfg.Replicas)
	}
	return kv, nil
}

// JetStream API error codes (the server's; the client names none of them):
// more replicas than a server without a cluster supports, than the
// cluster has resources for, or has peers to place them on.
const (
	codeReplicasNotSupported = 10074
	codeInsufficientPeers    = 10023
	codeNoPlacement          = 10005
)

func replicationRefused(err error) bool {
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode {
	case codeReplicasNotSupported, codeInsufficientPeers, codeNoPlacement:
		return true
	}
	return false
}

// bucketReplicas is the replication kv's stream has.
func bucketReplicas(ctx context.Context, kv jetstream.KeyValue) (int, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("task store: bucket %s: %w", kv.Bucket(), err)
	}
	js, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return 0, fmt.Errorf("task store: bucket %s: not a JetStream bucket", kv.Bucket())
	}
	return js.StreamInfo().Config.Replicas, nil
}

// renewLease keeps this replica's lease until Close. Each renewal is also
// the store's health check: health records whether it got through.
func (s *Store) renewLease() {
	t := time.NewTicker(s.cfg.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if !s.paused.Load() {
				s.renew() // a miss is retried at the next tick
			}
		}
	}
}

// renew renews the lease once and records whether that got through.
func (s *Store) renew() {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.LeaseTTL/3)
	_, err := s.leases.Put(ctx, s.replica, s.leaseValue())
	cancel()
	s.health.record(err, time.Now())
}

// Unavailable returns why the store cannot be reached (the last lease
// renewal failed), or nil.
func (s *Store) Unavailable() error { return s.health.unavailable() }

// Lease implements taskengine.Peers: the lease is held while the last
// renewal got through less than two thirds of its TTL ago (the server
// counts the TTL from its own receipt, before ours); a renewal after a
// longer gap starts a new epoch.
func (s *Store) Lease() (bool, uint64) {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return time.Since(s.health.renewed) < s.heldFor(), s.health.epoch
}

func (s *Store) heldFor() time.Duration { return s.cfg.LeaseTTL * 2 / 3 }

// health is whether the store answered the last lease renewal, logged
// when that changes, and the lease's epochs.
type health struct {
	log     *slog.Logger
	heldFor time.Duration // Store.heldFor

	mu      sync.Mutex
	err     error     // of the last renewal; nil: it got through
	since   time.Time // of the first failure in a row
	back    time.Time // when a renewal last got through after failures
	renewed time.Time // when a renewal last got through
	epoch   uint64
}

func (h *health) record(err error, now time.Time) {
	h.mu.Lock()
	lost, back := err != nil && h.err == nil, err == nil && h.err != nil
	if lost {
		h.since = now
	}
	if back {
		h.back = now
	}
	down := now.Sub(h.since)
	if err == nil {
		if now.Sub(h.renewed) >= h.heldFor {
			h.epoch++ // the lease may have lapsed since the last renewal
		}
		h.renewed = now
	}
	h.err = err
	h.mu.Unlock()
	// Logged outside mu: the engine asks for the lease under its own lock.
	switch {
	case lost:
		h.log.Warn("task store unreachable: tasks cannot be created, read or cancelled until it is back", "err", err)
	case back:
		h.log.Info("task store reachable again", "down_ms", down.Milliseconds())
	}
}

// recovering reports whether a missing lease proves nothing yet: this
// replica's own last renewal failed (the store may be just back, before
// the runners renewed), or the store came back less than ttl ago.
func (h *health) recovering(now time.Time, ttl time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err != nil || !h.back.IsZero() && now.Sub(h.back) < ttl
}

func (h *health) unavailable() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		return nil
	}
	return fmt.Errorf("task store unreachable since %s: %w", h.since.UTC().Format(time.RFC3339), h.err)
}

// Close gives up the lease, stops serving control requests and
// disconnects (and stops the embedded server). Close the engine first: it
// writes its last records through the store.
func (s *Store) Close() error {
	select {
	case <-s.stop:
		return nil
	default:
	}
	s.mu.Lock()
	close(s.stop) // under mu: no handler starts after this (Serve)
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
	}
	s.mu.Unlock()
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = s.leases.Delete(ctx, s.replica)
	cancel()
	s.nc.Close()
	s.shutdownServer()
	return nil
}

func (s *Store) shutdownServer() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
	}
}

// Replica implements taskengine.Peers.
func (s *Store) Replica() string { return s.replica }

func (s *Store) recordKey(owner, id string) string {
	return "t." + s.cfg.Keys.ownerTag(owner) + "." + id
}

func chunkKey(recordKey string, n int) string {
	return "o" + recordKey[1:] + "." + strconv.Itoa(n)
}

// stored is a record as the tasks bucket holds it (encrypted): an outcome
// too large for one value is in Chunks chunks, whose SHA-256 is Sum.
type stored struct {
	R      *taskengine.Record
	Chunks int    `json:",omitempty"`
	Sum    []byte `json:",omitempty"`
}

// ttlOf is what is left of a record's TTL (0: none), at least a second.
func ttlOf(r *taskengine.Record) time.Duration {
	if r.TTL <= 0 {
		return 0
	}
	return max(time.Until(r.CreatedAt.Add(r.TTL)), time.Second)
}

// encode seals r for key, writing its outcome's chunks first if it is
// large.
func (s *Store) encode(ctx context.Context, key string, r *taskengine.Record, ttl time.Duration) ([]byte, error) {
	st := stored{R: r}
	if len(r.Outcome) > maxInline {
		cp := *r
		st.R = &cp
		out := r.Outcome
		cp.Outcome = nil
		n := (len(out) + chunkSize - 1) / chunkSize
		if n > maxChunks {
			return nil, fmt.Errorf("an outcome of %d bytes is more than the store keeps", len(out))
		}
		sum := sha256.Sum256(out)
		st.Chunks, st.Sum = n, sum[:]
		for i := range n {
			part := out[i*chunkSize : min((i+1)*chunkSize, len(out))]
			ck := chunkKey(key, i)
			if err := s.publish(ctx, ck, s.cfg.Keys.seal(ck, part), ttl, nil); err != nil {
				return nil, fmt.Errorf("chunk %d: %w", i, err)
			}
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	if len(b) > maxRecordBytes {
		return nil, fmt.Errorf("a record of %d bytes is more than the store keeps", len(b))
	}
	return s.cfg.Keys.seal(key, b), nil
}

// decode opens a record value read from key, with its chunks if outcome
// is set (else a chunked outcome is left out).
func (s *Store) decode(ctx context.Context, key string, v []byte, outcome bool) (*taskengine.Record, error) {
	plain, err := s.cfg.Keys.open(key, v)
	if err != nil {
		return nil, err
	}
	var st stored
	if err := json.Unmarshal(plain, &st); err != nil || st.R == nil {
		return nil, fmt.Errorf("a stored record does not decode: %v", err)
	}
	if st.Chunks > 0 && !outcome {
		st.R.OutcomeOmitted = true
	} else if st.Chunks > 0 {
		if st.Chunks > maxChunks {
			return nil, errors.New("a stored record names too many chunks")
		}
		var out bytes.Buffer
		for i := range st.Chunks {
			ck := chunkKey(key, i)
			e, err := s.tasks.Get(ctx, ck)
			if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
				return nil, taskengine.ErrNotFound // expired with its record, or deleted
			}
			if err != nil {
				return nil, fmt.Errorf("chunk %d: %w", i, err)
			}
			part, err := s.cfg.Keys.open(ck, e.Value())
			if err != nil {
				return nil, err
			}
			out.Write(part)
		}
		if sum := sha256.Sum256(out.Bytes()); !bytes.Equal(sum[:], st.Sum) {
			return nil, errors.New("a stored outcome does not match its checksum")
		}
		st.R.Outcome = out.Bytes()
	}
	return st.R, nil
}

// publish writes a value with a TTL (0: none), if expect is set only when
// the key's last revision is *expect.
func (s *Store) publish(ctx context.Context, key string, v []byte, ttl time.Duration, expect *uint64) error {
	_, err := s.publishRev(ctx, key, v, ttl, expect)
	return err
}

func (s *Store) publishRev(ctx context.Context, key string, v []byte, ttl time.Duration, expect *uint64) (uint64, error) {
	var opts []jetstream.PublishOpt
	if ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(ttl))
	}
	if expect != nil {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(*expect))
	}
	ack, err := s.js.Publish(ctx, "$KV."+s.tasks.Bucket()+"."+key, v, opts...)
	if err != nil {
		var api *jetstream.APIError
		if errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			return 0, taskengine.ErrConflict
		}
		return 0, err
	}
	return ack.Sequence, nil
}

// Create implements taskengine.SharedStore.
func (s *Store) Create(ctx context.Context, r *taskengine.Record) (uint64, error) {
	key := s.recordKey(r.Owner, r.ID)
	ttl := ttlOf(r)
	v, err := s.encode(ctx, key, r, ttl)
	if err != nil {
		return 0, err
	}
	zero := uint64(0)
	return s.publishRev(ctx, key, v, ttl, &zero)
}

// Update implements taskengine.SharedStore.
func (s *Store) Update(ctx context.Context, r *taskengine.Record, rev uint64) (uint64, error) {
	key := s.recordKey(r.Owner, r.ID)
	ttl := ttlOf(r)
	v, err := s.encode(ctx, key, r, ttl)
	if err != nil {
		return 0, err
	}
	return s.publishRev(ctx, key, v, ttl, &rev)
}

// Load implements taskengine.SharedStore.
func (s *Store) Load(ctx context.Context, owner, id string, outcome bool) (*taskengine.Record, uint64, error) {
	if !validTaskID(id) {
		return nil, 0, taskengine.ErrNotFound
	}
	key := s.recordKey(owner, id)
	e, err := s.tasks.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, 0, taskengine.ErrNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	r, err := s.decode(ctx, key, e.Value(), outcome)
	if err != nil {
		return nil, 0, err
	}
	return r, e.Revision(), nil
}

// Delete implements taskengine.SharedStore: the record and its chunks.
func (s *Store) Delete(ctx context.Context, owner, id string) error {
	if !validTaskID(id) {
		return taskengine.ErrNotFound
	}
	key := s.recordKey(owner, id)
	e, err := s.tasks.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil
	}
	if err != nil {
		return err
	}
	chunks := 0
	if plain, err := s.cfg.Keys.open(key, e.Value()); err == nil {
		var st stored
		if json.Unmarshal(plain, &st) == nil {
			chunks = min(st.Chunks, maxChunks)
		}
	}
	if err := s.tasks.Purge(ctx, key); err != nil {
		return err
	}
	for i := range chunks {
		_ = s.tasks.Purge(ctx, chunkKey(key, i)) // a chunk left behind expires with its TTL
	}
	return nil
}

// List implements taskengine.SharedStore.
func (s *Store) List(ctx context.Context, owner string, limit int) ([]*taskengine.Record, error) {
	lister, err := s.tasks.ListKeysFiltered(ctx, "t."+s.cfg.Keys.ownerTag(owner)+".*")
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer lister.Stop()
	var out []*taskengine.Record
	for key := range lister.Keys() {
		if len(out) == limit {
			break
		}
		e, err := s.tasks.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue // expired since it was listed
		}
		if err != nil {
			return nil, err
		}
		r, err := s.decode(ctx, key, e.Value(), false)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, ctx.Err()
}

// Watch implements taskengine.SharedStore.
func (s *Store) Watch(ctx context.Context, owner, id string) (<-chan *taskengine.Record, error) {
	if !validTaskID(id) {
		return nil, taskengine.ErrNotFound
	}
	key := s.recordKey(owner, id)
	w, err := s.tasks.Watch(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make(chan *taskengine.Record, 1)
	s.mu.Lock()
	select {
	case <-s.stop:
		s.mu.Unlock()
		w.Stop()
		return nil, errors.New("task store: closed")
	default:
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer close(out)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.stop:
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil { // the end of the current values
					continue
				}
				if e.Operation() != jetstream.KeyValuePut {
					return // deleted or expired
				}
				r, err := s.decode(ctx, key, e.Value(), false)
				if err != nil {
					return // the reader sees the watch end and reloads, which fails
				}
				select { // the latest wins
				case <-out:
				default:
				}
				out <- r
			}
		}
	}()
	return out, nil
}

// Alive implements taskengine.Peers.
func (s *Store) Alive(ctx context.Context, replica string) (bool, error) {
	if !validTaskID(replica) {
		return false, nil
	}
	_, err := s.leases.Get(ctx, replica)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		// Just after the store came back every lease may have lapsed
		// while their replicas were fine: each gets a full lease to renew
		// before its tasks are judged lost.
		return s.health.recovering(time.Now(), s.cfg.LeaseTTL), nil
	}
	return false, err
}

func (s *Store) controlSubject(replica string) string {
	return s.cfg.Prefix + ".control." + replica
}

// Ask implements taskengine.Peers: a NATS request to the runner's control
// subject, encrypted both ways.
func (s *Store) Ask(ctx context.Context, replica string, c taskengine.Control) (taskengine.Reply, error) {
	if !validTaskID(replica) {
		return taskengine.Reply{}, errors.New("not a replica name")
	}
	subj := s.controlSubject(replica)
	b, err := json.Marshal(c)
	if err != nil {
		return taskengine.Reply{}, err
	}
	msg, err := s.nc.RequestWithContext(ctx, subj, s.cfg.Keys.seal(subj, b))
	if err != nil {
		return taskengine.Reply{}, err
	}
	if bytes.Equal(msg.Data, refusedControl) {
		return taskengine.Reply{}, fmt.Errorf("%w: replica %s cannot decrypt this replica's requests (written with key %q): give it the key file with that key", ErrKeys, replica, s.cfg.Keys.keys[0].id)
	}
	plain, err := s.cfg.Keys.open(subj+".reply", msg.Data)
	if err != nil {
		return taskengine.Reply{}, err
	}
	var reply taskengine.Reply
	if err := json.Unmarshal(plain, &reply); err != nil || reply.Record == nil && reply.Err == "" {
		return taskengine.Reply{}, fmt.Errorf("a control reply does not decode: %v", err)
	}
	return reply, nil
}

// refusedControl answers a control request that does not decrypt.
var refusedControl = []byte("\x00wasmtask: control request refused: it does not decrypt with this replica's keys")

// Serve implements taskengine.Peers: control requests run on their own
// goroutines, at most maxControls at once; more wait in NATS's buffer.
func (s *Store) Serve(h func(context.Context, taskengine.Control) taskengine.Reply) error {
	subj := s.controlSubject(s.replica)
	sub, err := s.nc.Subscribe(subj, func(m *nats.Msg) {
		select {
		case s.serving <- struct{}{}:
		case <-s.stop:
			return
		}
		s.mu.Lock()
		select {
		case <-s.stop: // closed: Close may already be waiting for wg
			s.mu.Unlock()
			<-s.serving
			return
		default:
		}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() { <-s.serving }()
			plain, err := s.cfg.Keys.open(subj, m.Data)
			if err != nil {
				// Not from a replica with our keys: refused with an
				// answer (unencrypted, so the sender reads it), not left
				// to time out.
				_ = m.Respond(refusedControl)
				return
			}
			var c taskengine.Control
			if err := json.Unmarshal(plain, &c); err != nil {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b, err := json.Marshal(h(ctx, c))
			if err != nil {
				return
			}
			_ = m.Respond(s.cfg.Keys.seal(subj+".reply", b))
		}()
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.sub = sub
	s.mu.Unlock()
	return nil
}

var (
	_ taskengine.SharedStore = (*Store)(nil)
	_ taskengine.Peers       = (*Store)(nil)
)
