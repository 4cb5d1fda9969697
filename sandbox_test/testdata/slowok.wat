;; slowok: a well-behaved module whose describe takes a second (it sleeps
;; through WASI poll_oneoff, as a tool that reads a large configuration
;; would spend the time), within the host's 2 s limit: it must load.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"slowok\",\"description\":\"Described after a second.\"}]}\00")
  (data (i32.const 8192) "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}\00")
  ;; One relative clock subscription of 1 s at 12288 (WASI subscription_t):
  ;; userdata 0, tag 0 (clock) at +8, clock id 1 (monotonic) at +16,
  ;; timeout 1e9 ns at +24, precision 0, flags 0 (relative).
  (data (i32.const 12304) "\01")
  (data (i32.const 12312) "\00\ca\9a\3b")
  (func $strlen (param $p i32) (result i32) (local $n i32)
    (block $d (loop $l
      (br_if $d (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $l)))
    (local.get $n))
  (func $puts (param $p i32)
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (call $strlen (local.get $p)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 2048))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)) ;; 'd'escribe
      (then
        (drop (call $poll (i32.const 12288) (i32.const 16384) (i32.const 1) (i32.const 20480)))
        (call $puts (i32.const 4096)) (return)))
    (call $puts (i32.const 8192)))
)
