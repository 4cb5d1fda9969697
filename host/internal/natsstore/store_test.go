package natsstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmtask/wasmtask/taskengine"
)

// startServer starts a NATS server with JetStream on a random local port,
// as a test's shared store, and returns its URL.
func startServer(t *testing.T) string { return startServerB(t) }

func startServerB(t testing.TB) string {
	t.Helper()
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats server did not start")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv.ClientURL()
}

// testStore is a JetStream store for the fault tests: one server, or a
// three-node cluster (buckets with three replicas). stop takes all of it
// away, start brings it back on the same ports and directories.
type testStore struct {
	url         string
	stop, start func()
}

// onEachStore runs f on a single server and on a three-node cluster: the
// faults a replica meets must be survived on both.
func onEachStore(t *testing.T, f func(t *testing.T, st testStore)) {
	t.Run("one server", func(t *testing.T) { f(t, singleStore(t)) })
	t.Run("three-node cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("a three-node cluster takes seconds to start; go test without -short runs it")
		}
		c := startCluster(t, 3)
		f(t, testStore{url: c.url(), stop: c.stopAll, start: c.startAll})
	})
}

// singleStore starts one server whose stop and start keep its port.
func singleStore(t *testing.T) testStore {
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true}
	var srv *server.Server
	start := func() {
		var err error
		if srv, err = server.NewServer(opts.Clone()); err != nil {
			t.Fatal(err)
		}
		srv.Start()
		if !srv.ReadyForConnections(30 * time.Second) {
			t.Fatal("nats server did not start")
		}
	}
	stop := func() {
		if srv != nil {
			srv.Shutdown()
			srv.WaitForShutdown()
			srv = nil
		}
	}
	start()
	opts.Port = srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(stop)
	return testStore{url: srv.ClientURL(), stop: stop, start: start}
}

// parseKeysString parses a key file's text.
func parseKeysString(text string) (*Keys, error) { return ParseKeys(strings.NewReader(text)) }

func testKeys(t *testing.T, text string) *Keys {
	t.Helper()
	k, err := ParseKeys(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// replica is one server process: a store and the engine on it.
type replica struct {
	s *Store
	e *taskengine.Engine
}

func (r replica) close() { r.e.Close(); r.s.Close() }

func openReplica(t *testing.T, cfg Config) replica { return openReplicaB(t, cfg) }

func openReplicaB(t testing.TB, cfg Config) replica {
	t.Helper()
	s, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := taskengine.New(taskengine.Config{
		MaxTasks: 1 << 20, MaxTasksPerOwner: 1 << 20,
		Shared: s, Peers: s, Codec: textCodec{}, SharedKey: cfg.Keys.Index, LivenessCheck: 100 * time.Millisecond,
	})
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	r := replica{s, e}
	t.Cleanup(r.close)
	return r
}

// textCodec carries strings (values, meta, inputs, answers) and work errors
// by their text.
type textCodec struct{}

func (textCodec) Encode(k taskengine.Kind, v any) ([]byte, error) {
	if k == taskengine.KindOutcome {
		out := v.(taskengine.Outcome)
		var msg string
		if out.Err != nil {
			msg = out.Err.Error()
		}
		return json.Marshal([]any{out.Value, out.Failed, msg})
	}
	return json.Marshal(v)
}

func (textCodec) Decode(k taskengine.Kind, b []byte) (any, error) {
	if k == taskengine.KindOutcome {
		var v struct {
			Value  any
			Failed bool
			Err    string
		}
		var a []json.RawMessage
		if err := json.Unmarshal(b, &a); err != nil || len(a) != 3 {
			return nil, fmt.Errorf("bad outcome %q", b)
		}
		_ = json.Unmarshal(a[0], &v.Value)
		_ = json.Unmarshal(a[1], &v.Failed)
		_ = json.Unmarshal(a[2], &v.Err)
		out := taskengine.Outcome{Value: v.Value, Failed: v.Failed}
		if v.Err != "" {
			out.Err = errors.New(v.Err)
		}
		return out, nil
	}
	var v any
	return v, json.Unmarshal(b, &v)
}

func blockingWork(started chan<- struct{}, ended chan<- error) taskengine.Work {
	return func(ctx context.Context, run *taskengine.Run) taskengine.Outcome {
		started <- struct{}{}
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return taskengine.Outcome{Err: context.Cause(ctx)}
	}
}

// TestThreeReplicas runs three replicas on one NATS server: a task created
// on one is read and cancelled on another (its work stops where it runs),
// a replica killed mid-task leaves its task failed, never working, and a
// restarted replica serves a result finished before the restart.
func TestThreeReplicas(t *testing.T) {
	url := startServer(t)
	keys := testKeys(t, NewKeyFile())
	cfg := Config{URL: url, Keys: keys, LeaseTTL: time.Second}
	a, b, c := openReplica(t, cfg), openReplica(t, cfg), openReplica(t, cfg)
	ctx := t.Context()

	// Create on A, get and cancel on B.
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	task, err := a.e.Submit(context.Background(), "alice", taskengine.SubmitOptions{Meta: "slow", TTL: time.Hour}, blockingWork(started, ended))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	got, err := b.e.Get(context.Background(), "alice", task.ID)
	if err != nil || got.Status != taskengine.StatusWorking || got.Meta != "slow" {
		t.Fatalf("B: Get = %+v, %v; want working, meta \"slow\"", got, err)
	}
	if _, err := b.e.Get(context.Background(), "bob", task.ID); !errors.Is(err, taskengine.ErrNotFound) {
		t.Errorf("B: Get by another owner = %v, want ErrNotFound", err)
	}
	got, err = b.e.Cancel(context.Background(), "alice", task.ID)
	if err != nil || got.Status != taskengine.StatusCancelled {
		t.Fatalf("B: Cancel = %+v, %v; want cancelled", got, err)
	}
	if cause := <-ended; !errors.Is(cause, taskengine.ErrCancelled) {
		t.Errorf("A: work ended by %v, want ErrCancelled", cause)
	}
	if got, err := c.e.Get(context.Background(), "alice", task.ID); err != nil || got.Status != taskengine.StatusCancelled {
		t.Errorf("C: Get after B's cancel = %+v, %v; want cancelled", got, err)
	}

	// A blocking wait on C wakes when B's task finishes.
	release := make(chan struct{})
	done, err := b.e.Submit(context.Background(), "alice", taskengine.SubmitOptions{TTL: time.Hour}, func(ctx context.Context, run *taskengine.Run) taskengine.Outcome {
		<-release
		return taskengine.Outcome{Value: "result of B", Size: 11}
	})
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan taskengine.Outcome, 1)
	go func() {
		_, out, err := c.e.Wait(ctx, "alice", done.ID)
		if err != nil {
			out.Err = err
		}
		waited <- out
	}()
	close(release)
	if out := <-waited; out.Err != nil || out.Value != "result of B" {
		t.Errorf("C: Wait = %+v; want B's result", out)
	}

	// Kill A mid-task: its lease lapses and its task is failed.
	lost, err := a.e.Submit(context.Background(), "alice", taskengine.SubmitOptions{TTL: time.Hour}, blockingWork(started, ended))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	a.s.crash()
	got, _, err = c.e.Wait(ctx, "alice", lost.ID) // returns at a liveness check after the lease lapsed
	if err != nil || got.Status != taskengine.StatusFailed || !errors.Is(got.Err, taskengine.ErrReplicaLost) {
		t.Fatalf("C: Wait on the dead replica's task = %+v, %v; want failed, ErrReplicaLost", got, err)
	}

	// Restart B: the finished result survives.
	b.close()
	b2 := openReplica(t, cfg)
	_, out, err := b2.e.Wait(ctx, "alice", done.ID)
	if err != nil || out.Value != "result of B" {
		t.Errorf("restarted B: Wait = %+v, %v; want the result finished before the restart", out, err)
	}
}

// crash stops the store as a killed process would: no lease renewal, no
// goodbye, the connection dropped.
func (s *Store) crash() {
	s.mu.Lock()
	close(s.stop)
	s.mu.Unlock()
	s.nc.Close()
	s.wg.Wait()
}

func secret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// TestWrongKeysRefusedAtStart: a replica whose key file cannot read the
// store's records, or would write records a running replica cannot read,
// does not start, and the error names the problem; the store's records
// stay readable by the right replicas.
func TestWrongKeysRefusedAtStart(t *testing.T) {
	onEachStore(t, func(t *testing.T, st testStore) { testWrongKeysRefusedAtStart(t, st.url) })
}

func testWrongKeysRefusedAtStart(t *testing.T, url string) {
	index, k1 := secret(), secret()
	a := openReplica(t, Config{URL: url, Keys: testKeys(t, "index "+index+"\nkey k1 "+k1)})
	task, err := a.e.Submit(context.Background(), "alice", taskengine.SubmitOptions{}, func(context.Context, *taskengine.Run) taskengine.Outcome {
		return taskengine.Outcome{Value: "secret"}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.e.Wait(t.Context(), "alice", task.ID); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ name, keys, want string }{
		{"another index key", "index " + secret() + "\nkey k1 " + k1, "index key"},
		{"another key, another ID", "index " + index + "\nkey k9 " + secret(), `written with key "k1", which the key file lacks`},
		{"another key, the same ID", "index " + index + "\nkey k1 " + secret(), `key "k1" of the key file is not the key`},
		{"a new first key the running replica lacks", "index " + index + "\nkey k2 " + secret() + "\nkey k1 " + k1, "cannot read"},
	} {
		s, err := Open(t.Context(), Config{URL: url, Keys: testKeys(t, tc.keys)})
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, ErrKeys) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Open = %v; want ErrKeys saying %q", tc.name, err, tc.want)
		}
	}
	if _, out, err := a.e.Wait(t.Context(), "alice", task.ID); err != nil || out.Value != "secret" {
		t.Errorf("after the wrong replicas tried: Wait = %+v, %v; want the record intact", out, err)
	}

	// A store without a check record (written before key checks, or the
	// record purged): the task records themselves are the check.
	if err := a.s.tasks.Purge(t.Context(), checkKey); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, keys, want string }{
		{"no check record, another index key", "index " + secret() + "\nkey k1 " + k1, "index key"},
		{"no check record, another key", "index " + index + "\nkey k1 " + secret(), "cannot read"},
	} {
		s, err := Open(t.Context(), Config{URL: url, Keys: testKeys(t, tc.keys)})
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, ErrKeys) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Open = %v; want ErrKeys saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := a.s.tasks.Get(t.Context(), checkKey); err == nil {
		t.Errorf("a refused replica wrote the check record")
	}
	openReplica(t, Config{URL: url, Keys: testKeys(t, "index "+index+"\nkey k1 "+k1)})
	if _, err := a.s.tasks.Get(t.Context(), checkKey); err != nil {
		t.Errorf("a replica with the right keys did not write the check record: %v", err)
	}
}

// TestKeyRotation: README's rotation, one replica at a time: the new key
// as a second line everywhere, then first everywhere. At every step each
// running replica reads every task, whichever wrote it, and answers the
// others' control requests.
func TestKeyRotation(t *testing.T) {
	onEachStore(t, func(t *testing.T, st testStore) { testKeyRotation(t, st.url) })
}

func testKeyRotation(t *testing.T, url string) {
	index, k1, k2 := secret(), secret(), secret()
	old := "index " + index + "\nkey k1 " + k1
	readsNew := old + "\nkey k2 " + k2
	writesNew := "index " + index + "\nkey k2 " + k2 + "\nkey k1 " + k1
	a := openReplica(t, Config{URL: url, Keys: testKeys(t, old)})
	b := openReplica(t, Config{URL: url, Keys: testKeys(t, old)})
	var tasks []string
	step := func(name string) {
		t.Helper()
		for _, w := range []replica{a, b} {
			task, err := w.e.Submit(t.Context(), "alice", taskengine.SubmitOptions{}, func(context.Context, *taskengine.Run) taskengine.Outcome {
				return taskengine.Outcome{Value: "v"}
			})
			if err != nil {
				t.Fatalf("%s: Submit: %v", name, err)
			}
			tasks = append(tasks, task.ID)
		}
		for _, r := range []replica{a, b} {
			for _, id := range tasks {
				if _, out, err := r.e.Wait(t.Context(), "alice", id); err != nil || out.Value != "v" {
					t.Fatalf("%s: task %s: %+v, %v", name, id, out, err)
				}
			}
		}
		// A control request across: b cancels a task running on a.
		started, ended := make(chan struct{}), make(chan error, 1)
		task, err := a.e.Submit(t.Context(), "alice", taskengine.SubmitOptions{}, blockingWork(started, ended))
		if err != nil {
			t.Fatal(err)
		}
		<-started
		if _, err := b.e.Cancel(t.Context(), "alice", task.ID); err != nil {
			t.Fatalf("%s: cancel across replicas: %v", name, err)
		}
		<-ended
	}
	restart := func(r *replica, keys string) {
		t.Helper()
		r.close()
		*r = openReplica(t, Config{URL: url, Keys: testKeys(t, keys)})
	}
	step("before")
	restart(&a, readsNew)
	step("a reads k2")
	restart(&b, readsNew)
	step("both read k2")
	restart(&a, writesNew)
	step("a writes k2")
	restart(&b, writesNew)
	step("both write k2")
}

// TestControlRefusedAnswered: a control request that does not decrypt is
// answered with a refusal, not left to time out.
func TestControlRefusedAnswered(t *testing.T) {
	url := startServer(t)
	a := openReplica(t, Config{URL: url, Keys: testKeys(t, "index "+secret()+"\nkey k1 "+secret())})
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msg, err := nc.RequestWithContext(t.Context(), a.s.controlSubject(a.s.Replica()), []byte("not sealed"))
	if err != nil || string(msg.Data) != string(refusedControl) {
		t.Fatalf("a request that does not decrypt: %v %q; want the refusal", err, msg.Data)
	}
}

func TestLargeOutcomeIsChunked(t *testing.T) {
	url := startServer(t)
	cfg := Config{URL: url, Keys: testKeys(t, NewKeyFile())}
	a, b := openReplica(t, cfg), openReplica(t, cfg)
	big := strings.Repeat("0123456789abcdef", 3<<16) // 3 MiB
	task, err := a.e.Submit(context.Background(), "alice", taskengine.SubmitOptions{}, func(context.Context, *taskengine.Run) taskengine.Outcome {
		return taskengine.Outcome{Value: big, Size: int64(len(big))}
	})
	if err != nil {
		t.Fatal(err)
	}
	_, out, err := b.e.Wait(t.Context(), "alice", task.ID)
	if err != nil || out.Value != big {
		t.Fatalf("B: Wait of a 3 MiB outcome: %v, equal %v", err, out.Value == big)
	}
}

func TestHostileTaskIDs(t *testing.T) {
	url := startServer(t)
	a := openReplica(t, Config{URL: url, Keys: testKeys(t, NewKeyFile())})
	for _, id := range []string{"", "*", ">", "a.b", "AAAAAAAAAAAAAAAAAAAAAAAAA*", strings.Repeat("A", 27), "t.x.y"} {
		if _, err := a.e.Get(context.Background(), "alice", id); !errors.Is(err, taskengine.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", id, err)
		}
	}
}

// TestSoak runs 10,000 tasks over two replicas, each read back from the
// replica that did not run it: none may be lost or wrong.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("a soak: not in -short")
	}
	url := startServer(t)
	cfg := Config{URL: url, Keys: testKeys(t, NewKeyFile())}
	rs := []replica{openReplica(t, cfg), openReplica(t, cfg)}
	const n, workers = 10000, 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lost []string
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				runOn, readOn := rs[i%2], rs[(i+1)%2]
				owner := fmt.Sprintf("tenant-%d", i%7)
				want := fmt.Sprintf("result %d", i)
				task, err := runOn.e.Submit(context.Background(), owner, taskengine.SubmitOptions{}, func(context.Context, *taskengine.Run) taskengine.Outcome {
					return taskengine.Outcome{Value: want, Size: int64(len(want))}
				})
				if err != nil {
					mu.Lock()
					lost = append(lost, fmt.Sprintf("%d: submit: %v", i, err))
					mu.Unlock()
					continue
				}
				_, out, err := readOn.e.Wait(t.Context(), owner, task.ID)
				if err != nil || out.Value != want {
					mu.Lock()
					lost = append(lost, fmt.Sprintf("%d: %v %v", i, out.Value, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(lost) > 0 {
		t.Fatalf("%d of %d results lost or wrong, first: %s", len(lost), n, lost[0])
	}
}

// TestEmbeddedStoreSurvivesRestart: one server with an embedded store on
// a directory keeps its finished results across a crash and restart (the
// crash: no goodbye, the embedded server stopped under it).
func TestEmbeddedStoreSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts an embedded server: not in -short")
	}
	cfg := Config{Dir: t.TempDir(), Keys: testKeys(t, NewKeyFile())}
	first := openReplica(t, cfg)
	task, err := first.e.Submit(context.Background(), "alice", taskengine.SubmitOptions{TTL: time.Hour}, func(context.Context, *taskengine.Run) taskengine.Outcome {
		return taskengine.Outcome{Value: "kept across restarts"}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := first.e.Wait(t.Context(), "alice", task.ID); err != nil {
		t.Fatal(err)
	}
	running, err := first.e.Submit(context.Background(), "alice", taskengine.SubmitOptions{TTL: time.Hour}, blockingWork(make(chan struct{}, 1), make(chan error, 1)))
	if err != nil {
		t.Fatal(err)
	}
	first.s.crash()
	first.s.shutdownServer()

	second := openReplica(t, cfg)
	_, out, err := second.e.Wait(t.Context(), "alice", task.ID)
	if err != nil || out.Value != "kept across restarts" {
		t.Errorf("after restart: Wait = %+v, %v; want the result finished before the crash", out, err)
	}
	got, _, err := second.e.Wait(t.Context(), "alice", running.ID) // its lease lapses
	if err != nil || got.Status != taskengine.StatusFailed || !errors.Is(got.Err, taskengine.ErrReplicaLost) {
		t.Errorf("after restart: the task running at the crash = %+v, %v; want failed, ErrReplicaLost", got, err)
	}
}

// TestPausedRunner: a runner that stops renewing its lease (a stopped
// process, a long pause) has its task failed by another replica; from then
// on it answers from the store too, failed, and stops the work, and once it
// renews again nothing goes back.
func TestPausedRunner(t *testing.T) {
	onEachStore(t, func(t *testing.T, st testStore) { testPausedRunner(t, st.url) })
}

func testPausedRunner(t *testing.T, url string) {
	cfg := Config{URL: url, Keys: testKeys(t, "index "+secret()+"\nkey k1 "+secret()), LeaseTTL: 600 * time.Millisecond}
	a, b := openReplica(t, cfg), openReplica(t, cfg)
	task, ended := startBlocking(t, a)
	status := func(r replica) taskengine.Status {
		t.Helper()
		got, err := r.e.Get(t.Context(), "alice", task.ID)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		return got.Status
	}
	if st := status(b); st != taskengine.StatusWorking {
		t.Fatalf("B before the pause: %s, want working", st)
	}

	a.s.lapse(t)
	if st := status(b); st != taskengine.StatusFailed {
		t.Fatalf("B, with A's lease lapsed: %s, want failed", st)
	}
	if st := status(a); st != taskengine.StatusFailed {
		t.Errorf("A, paused, after B failed its task: %s, want failed (the store's)", st)
	}
	if err := <-ended; !errors.Is(err, taskengine.ErrReplicaLost) {
		t.Errorf("A's work ended with %v, want ErrReplicaLost", err)
	}

	a.s.paused.Store(false)
	a.s.renew()
	if held, _ := a.s.Lease(); !held {
		t.Fatal("A renewed its lease, but does not hold it")
	}
	for _, r := range []replica{a, b} {
		if st := status(r); st != taskengine.StatusFailed {
			t.Errorf("after A renewed: %s, want failed on both", st)
		}
	}
	if got, err := a.e.Cancel(t.Context(), "alice", task.ID); !errors.Is(err, taskengine.ErrTerminal) || got.Status != taskengine.StatusFailed {
		t.Errorf("A: Cancel = %s, %v; want failed, ErrTerminal", got.Status, err)
	}
}

// TestStoreAwayLongerThanALease: the store stops for longer than a lease,
// so every lease has lapsed when it comes back; a replica reading another's
// running task then waits for the runner to renew instead of failing it.
func TestStoreAwayLongerThanALease(t *testing.T) {
	onEachStore(t, testStoreAwayLongerThanALease)
}

func testStoreAwayLongerThanALease(t *testing.T, st testStore) {
	cfg := Config{URL: st.url, Keys: testKeys(t, "index "+secret()+"\nkey k1 "+secret())}
	a, b := openReplica(t, cfg), openReplica(t, cfg)
	task, ended := startBlocking(t, a)

	// Both replicas find the store away at a renewal; while it is away
	// longer than a lease, every lease lapses.
	a.s.paused.Store(true)
	b.s.paused.Store(true)
	st.stop()
	a.s.renew()
	b.s.renew()
	if a.s.Unavailable() == nil || b.s.Unavailable() == nil {
		t.Fatal("a renewal with the store away got through")
	}
	st.start()
	waitBuckets(t, st.url)
	deleteLeases(t, st.url, a, b)
	got, err := b.e.Get(t.Context(), "alice", task.ID)
	if err != nil || got.Status != taskengine.StatusWorking {
		t.Errorf("B, just after the store came back: %s, %v; want working (A is fine)", got.Status, err)
	}
	select {
	case err := <-ended:
		t.Errorf("A's work ended: %v", err)
	default:
	}
	if got, err := a.e.Get(t.Context(), "alice", task.ID); err != nil || got.Status != taskengine.StatusWorking {
		t.Errorf("A: %s, %v; want working", got.Status, err)
	}
}

// startBlocking starts on r a task of alice whose work runs until it is
// cancelled, and returns it once the work runs, with the channel its end's
// cause arrives on.
func startBlocking(t *testing.T, r replica) (taskengine.Task, <-chan error) {
	t.Helper()
	started, ended := make(chan struct{}), make(chan error, 1)
	task, err := r.e.Submit(t.Context(), "alice", taskengine.SubmitOptions{}, blockingWork(started, ended))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	return task, ended
}

// lapse makes s as a paused process leaves it: it renews no lease, its
// lease is gone from the store (as the lease's TTL removes it), and its
// last renewal is too long ago for it to hold one.
func (s *Store) lapse(t *testing.T) {
	t.Helper()
	s.paused.Store(true)
	if err := s.leases.Delete(t.Context(), s.replica); err != nil {
		t.Fatal(err)
	}
	s.health.mu.Lock()
	s.health.renewed = time.Time{}
	s.health.mu.Unlock()
}

// jetStreamOf is a JetStream client of the store at url, closed at the
// end of the test.
func jetStreamOf(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// deleteLeases removes the replicas' leases from the store at url, as
// their TTL does while the store is away longer than a lease.
func deleteLeases(t *testing.T, url string, rs ...replica) {
	t.Helper()
	js := jetStreamOf(t, url)
	kv, err := js.KeyValue(t.Context(), "wasmtask_leases")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if err := kv.Delete(t.Context(), r.s.replica); err != nil {
			t.Fatal(err)
		}
	}
}

// waitBuckets waits until both buckets of the store at url answer reads:
// a cluster that was stopped elects a leader for each stream after its
// meta leader.
func waitBuckets(t *testing.T, url string) {
	t.Helper()
	js := jetStreamOf(t, url)
	for _, name := range []string{"wasmtask_tasks", "wasmtask_leases"} {
		for {
			kv, err := js.KeyValue(t.Context(), name)
			if err == nil {
				if _, err = kv.Get(t.Context(), "probe"); errors.Is(err, jetstream.ErrKeyNotFound) {
					break
				}
			}
			select {
			case <-t.Context().Done():
				t.Fatalf("bucket %s: %v", name, err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
