// Package natsstore keeps the task records that replicas of one server
// share in NATS JetStream, for the task engine's SharedStore and Peers: a
// key-value bucket of records ("<prefix>_tasks", one key per task, each
// with its task's TTL as a per-key TTL), a bucket of replica leases
// ("<prefix>_leases", on disk, bucket TTL = the lease TTL, renewed by every
// replica at a third of it), and one request subject per replica for the control
// requests of the others ("<prefix>.control.<replica>": cancel, answer).
//
// Everything stored or sent is encrypted with AES-256-GCM under the
// operator's keys (a key file: one index key, and encryption keys by ID;
// the first encrypts, all decrypt, which is how keys rotate), bound to the
// key or subject it is written to. Record keys name the owner only by an
// HMAC of it under the index key, and take only IDs of the engine's own
// alphabet, so a client's task ID cannot reach another key. A value that
// does not decrypt is an error, never a miss: a replica with a wrong or
// missing key fails closed, and writes only by compare-and-set on a
// revision it has read, so it cannot overwrite what it cannot read.
//
// An outcome larger than 4 KiB is written as chunks of up to 256 KiB under
// their own keys (same TTL, checked by SHA-256) before the record that
// names them, and read only when the outcome itself is asked for (a
// blocking result, never a status poll or a list). The engine deletes the
// record (and its chunks) of a task it evicts, so each owner's bounds hold
// in the store as on the replica; the bucket itself is bounded (MaxBytes).
//
// With no URL, Open starts an embedded NATS server with JetStream in this
// process, on a local directory, connected in process without a listener:
// a single server whose finished results survive a crash and restart.
package natsstore
