;; ansi: a tool module whose every text carries terminal escapes: its title
;; and description (ESC, a bidirectional override), a progress message and a
;; log line (raw ESC bytes), and its result text. An operator running
;; `wasmtask inspect` or `wasmtask call` on it must see escapes, not obey them.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasmtask_v1" "progress" (func $progress (param f64 f64 i32 i32)))
  (import "wasmtask_v1" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"ansi\",\"title\":\"T\\u001b[2J\",\"description\":\"evil\\u202etxt.exe\"}]}\00")
  (data (i32.const 8192) "{\"content\":[{\"type\":\"text\",\"text\":\"R\\u001b]0;pwned\\u0007\"}]}\00")
  ;; "P" ESC "[2J" and "L" ESC "[31m"
  (data (i32.const 12288) "P\1b[2J")
  (data (i32.const 12352) "L\1b[31m")
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
    ;; {"abi":1,"method":"d… : byte 19 is the method's first letter
    (if (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100))
      (then (call $puts (i32.const 4096)) (return)))
    (call $progress (f64.const 1) (f64.const 2) (i32.const 12288) (i32.const 5))
    (call $log (i32.const 1) (i32.const 12352) (i32.const 6))
    (call $puts (i32.const 8192)))
)
