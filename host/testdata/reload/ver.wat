;; ver — a test tool module for hot reload (ABI v1, command module).
;;
;; It declares one tool whose name is the 18-byte placeholder "TOOL_PLACEHOLDER"
;; (quotes included) and answers every call with a text that is the 18-byte
;; placeholder "VERSION_PLACEHOL". Tests patch both in the built bytes
;; (same length, padded with spaces outside the JSON string), so one build
;; gives any number of modules with distinct tool names, versions and digests.
;;
;; Arguments: {"ms":N} sleeps N ms (poll_oneoff, so cancellation ends it);
;; {"hold":true} first asks the user through wasmtask_v1.elicit and waits.
;;
;; Build: wat2wasm ver.wat -o ver.wasm
(module
  (import "wasi_snapshot_preview1" "fd_read"     (func $fd_read     (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write"    (func $fd_write    (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit"   (func $proc_exit   (param i32)))
  (import "wasmtask_v1" "elicit" (func $elicit (param i32 i32) (result i32)))

  (memory (export "memory") 1)

  ;; 0..32 iovec and counters; 64..112 poll subscription; 128..160 event;
  ;; 256.. constants; 4096.. the request (at most 61440 bytes).
  (global $IN i32 (i32.const 4096))
  (global $IN_CAP i32 (i32.const 61440))
  (global $in_len (mut i32) (i32.const 0))

  (data (i32.const 256) "{\"abi\":1,")              ;; 9
  (data (i32.const 272) "\"method\":\"describe\"")  ;; 19
  (data (i32.const 304) "\"hold\":true")             ;; 11
  (data (i32.const 320) "\"ms\":")                   ;; 5
  (data (i32.const 336) "ver: not an ABI v1 request\n") ;; 27
  (data (i32.const 512) "{\"message\":\"Go on?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"}}}}") ;; 95
  (data (i32.const 768) "{\"content\":[{\"type\":\"text\",\"text\":\"VERSION_PLACEHOL\"}]}") ;; 55
  (data (i32.const 1024) "{\"abi\":1,\"name\":\"ver\",\"tools\":[{\"name\":\"TOOL_PLACEHOLDER\",\"description\":\"Answers with its version; ms sleeps first, hold asks the user first.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":60000},\"hold\":{\"type\":\"boolean\"}},\"additionalProperties\":false},\"taskSupport\":\"optional\"}]}") ;; 324

  (func $write (param $fd i32) (param $ptr i32) (param $len i32)
    (block $done
      (loop $more
        (br_if $done (i32.le_s (local.get $len) (i32.const 0)))
        (i32.store (i32.const 0) (local.get $ptr))
        (i32.store (i32.const 4) (local.get $len))
        (br_if $done (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8)))
        (local.set $ptr (i32.add (local.get $ptr) (i32.load (i32.const 8))))
        (local.set $len (i32.sub (local.get $len) (i32.load (i32.const 8))))
        (br $more))))

  (func $fail
    (call $write (i32.const 2) (i32.const 336) (i32.const 27))
    (call $proc_exit (i32.const 2)))

  (func $read_all
    (loop $more
      (i32.store (i32.const 0) (i32.add (global.get $IN) (global.get $in_len)))
      (i32.store (i32.const 4) (i32.sub (global.get $IN_CAP) (global.get $in_len)))
      (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8))
        (then (call $fail)))
      (global.set $in_len (i32.add (global.get $in_len) (i32.load (i32.const 8))))
      (if (i32.ge_u (global.get $in_len) (global.get $IN_CAP))
        (then (call $fail)))
      (br_if $more (i32.load (i32.const 8)))))

  ;; has(off, s, n): whether the request holds the n bytes at s at offset off.
  (func $has (param $off i32) (param $s i32) (param $n i32) (result i32)
    (local $i i32)
    (if (i32.gt_u (i32.add (local.get $off) (local.get $n)) (global.get $in_len))
      (then (return (i32.const 0))))
    (block $differ
      (loop $next
        (if (i32.eq (local.get $i) (local.get $n)) (then (return (i32.const 1))))
        (br_if $differ (i32.ne
          (i32.load8_u (i32.add (global.get $IN) (i32.add (local.get $off) (local.get $i))))
          (i32.load8_u (i32.add (local.get $s) (local.get $i)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const 0))

  ;; find(s, n): offset just after the first occurrence of the n bytes at s, or -1.
  (func $find (param $s i32) (param $n i32) (result i32)
    (local $off i32)
    (loop $next
      (if (i32.gt_u (i32.add (local.get $off) (local.get $n)) (global.get $in_len))
        (then (return (i32.const -1))))
      (if (call $has (local.get $off) (local.get $s) (local.get $n))
        (then (return (i32.add (local.get $off) (local.get $n)))))
      (local.set $off (i32.add (local.get $off) (i32.const 1)))
      (br $next))
    (i32.const -1))

  ;; digits(off): the decimal number at off (spaces skipped, at most 9 digits).
  (func $digits (param $off i32) (result i64)
    (local $c i32) (local $v i64) (local $n i32)
    (block $end
      (loop $next
        (br_if $end (i32.ge_u (local.get $off) (global.get $in_len)))
        (local.set $c (i32.load8_u (i32.add (global.get $IN) (local.get $off))))
        (local.set $off (i32.add (local.get $off) (i32.const 1)))
        (br_if $next (i32.eq (local.get $c) (i32.const 32)))
        (br_if $end (i32.or (i32.lt_u (local.get $c) (i32.const 48)) (i32.gt_u (local.get $c) (i32.const 57))))
        (br_if $end (i32.ge_u (local.get $n) (i32.const 9)))
        (local.set $v (i64.add (i64.mul (local.get $v) (i64.const 10)) (i64.extend_i32_u (i32.sub (local.get $c) (i32.const 48)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $next)))
    (local.get $v))

  ;; sleep(ms) through one relative monotonic clock subscription.
  (func $sleep (param $ms i64)
    (i64.store (i32.const 64) (i64.const 0))         ;; userdata
    (i32.store8 (i32.const 72) (i32.const 0))        ;; tag: clock
    (i32.store (i32.const 80) (i32.const 1))         ;; clock id: monotonic
    (i64.store (i32.const 88) (i64.mul (local.get $ms) (i64.const 1000000))) ;; timeout ns
    (i64.store (i32.const 96) (i64.const 0))         ;; precision
    (i32.store16 (i32.const 104) (i32.const 0))      ;; flags: relative
    (drop (call $poll_oneoff (i32.const 64) (i32.const 128) (i32.const 1) (i32.const 160))))

  (func (export "_start")
    (local $p i32)
    (call $read_all)
    (if (i32.eqz (call $has (i32.const 0) (i32.const 256) (i32.const 9)))
      (then (call $fail)))
    (if (call $has (i32.const 9) (i32.const 272) (i32.const 19))
      (then (call $write (i32.const 1) (i32.const 1024) (i32.const 324)) (return)))
    (local.set $p (call $find (i32.const 320) (i32.const 5)))
    (if (i32.ge_s (local.get $p) (i32.const 0))
      (then (call $sleep (call $digits (local.get $p)))))
    (if (i32.ge_s (call $find (i32.const 304) (i32.const 11)) (i32.const 0))
      (then (drop (call $elicit (i32.const 512) (i32.const 95)))))
    (call $write (i32.const 1) (i32.const 768) (i32.const 55)))
)
