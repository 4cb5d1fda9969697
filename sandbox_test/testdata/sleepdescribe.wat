;; sleepdescribe: describe never answers; it sleeps (WASI poll_oneoff on a
;; one-hour clock) until the host's describe limit ends it. It costs no
;; CPU, so a directory of them measures how long loading makes a good
;; module wait, not how busy the machine is. The module is tiny, so a
;; size-ordered load queue takes it before larger modules.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")
    ;; One subscription at 0: userdata 0, tag 0 (clock), clock id 1
    ;; (monotonic) at 16, timeout at 24 (3.6e12 ns), precision 0, flags 0
    ;; (relative). The event goes at 64, the count at 128.
    (i32.store (i32.const 16) (i32.const 1))
    (i64.store (i32.const 24) (i64.const 3600000000000))
    (drop (call $poll_oneoff (i32.const 0) (i32.const 64) (i32.const 1) (i32.const 128)))))
