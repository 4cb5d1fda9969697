package natsstore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/wasmtask/wasmtask/taskengine"
)

// BenchmarkRoundTrip is a task's round trip (submit, work returns a small
// value, wait for it) with tasks in memory and in the NATS store, side by
// side: on one replica, and read back from a second replica.
//
//	go test -run '^$' -bench RoundTrip -count 6 ./host/internal/natsstore/
func BenchmarkRoundTrip(b *testing.B) {
	url := startServerB(b)
	keys, _ := parseKeysString(NewKeyFile())
	work := func(context.Context, *taskengine.Run) taskengine.Outcome {
		return taskengine.Outcome{Value: "result", Size: 6}
	}
	run := func(b *testing.B, submit, wait *taskengine.Engine) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				t, err := submit.Submit(context.Background(), "alice", taskengine.SubmitOptions{}, work)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := wait.Wait(context.Background(), "alice", t.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("memory", func(b *testing.B) {
		e, _ := taskengine.New(taskengine.Config{MaxTasks: 1 << 20, MaxTasksPerOwner: 1 << 20})
		defer e.Close()
		run(b, e, e)
	})
	x, y := openReplicaB(b, Config{URL: url, Keys: keys}), openReplicaB(b, Config{URL: url, Keys: keys})
	b.Run("nats/same-replica", func(b *testing.B) { run(b, x.e, x.e) })
	b.Run("nats/other-replica", func(b *testing.B) { run(b, x.e, y.e) })
}

// BenchmarkCancelAcrossReplicas measures a cancel on one replica until the
// work on the other has seen its context end: p50 and p99 over b.N cancels.
//
//	go test -run '^$' -bench CancelAcross -benchtime 200x ./host/internal/natsstore/
func BenchmarkCancelAcrossReplicas(b *testing.B) {
	url := startServerB(b)
	keys, _ := parseKeysString(NewKeyFile())
	x, y := openReplicaB(b, Config{URL: url, Keys: keys}), openReplicaB(b, Config{URL: url, Keys: keys})
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t, err := x.e.Submit(context.Background(), "alice", taskengine.SubmitOptions{}, blockingWork(started, ended))
		if err != nil {
			b.Fatal(err)
		}
		<-started
		begin := time.Now()
		if _, err := y.e.Cancel(context.Background(), "alice", t.ID); err != nil {
			b.Fatal(err)
		}
		<-ended
		lat = append(lat, time.Since(begin))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
