;; add — a wasmtask tool module in hand-written WebAssembly text (ABI v1,
;; see abi/ABI.md). No compiler, no libc: only WASI preview1 imports and one
;; optional wasmtask_v1 import.
;;
;; Tool "add" returns a + b for two integers a and b (|a|, |b| <= 10^12).
;;
;; Build: wat2wasm add.wat -o add.wasm
;;
;; It relies on the host writing the request as compact JSON with members in
;; the order abi, method, tool, arguments (ABI.md section 2), and finds "a"
;; and "b" as keys inside the arguments. The input schema forbids other
;; members, so the first "a": and "b": are the arguments.
(module
  (import "wasi_snapshot_preview1" "fd_read"   (func $fd_read   (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write"  (func $fd_write  (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  ;; log(level, msg_ptr, msg_len): optional, shown here for the record.
  (import "wasmtask_v1" "log" (func $log (param i32 i32 i32)))

  (memory (export "memory") 1)

  ;; Memory map:
  ;;   0..16      iovec and nread/nwritten scratch
  ;;   64..96     decimal digits of the sum, written backwards from 96
  ;;   256..2047  constant strings (data segments below)
  ;;   4096..     the request, at most 61440 bytes
  (global $IN i32 (i32.const 4096))
  (global $IN_CAP i32 (i32.const 61440))
  (global $in_len (mut i32) (i32.const 0))
  (global $ok (mut i32) (i32.const 0))

  (data (i32.const 256) "{\"abi\":1,")                           ;; 9
  (data (i32.const 272) "\"method\":\"describe\"}")             ;; 20
  (data (i32.const 304) "\"method\":\"call\",\"tool\":\"add\"")  ;; 28
  (data (i32.const 336) "\"method\":\"call\",")                 ;; 16
  (data (i32.const 352) "\"a\"")                                 ;; 3
  (data (i32.const 356) "\"b\"")                                 ;; 3
  (data (i32.const 384) "{\"content\":[{\"type\":\"text\",\"text\":\"")  ;; 35
  (data (i32.const 432) "\"}],\"structuredContent\":{\"sum\":")      ;; 31
  (data (i32.const 472) "}}")                                     ;; 2
  (data (i32.const 512) "{\"content\":[{\"type\":\"text\",\"text\":\"add needs two integer arguments a and b between -1000000000000 and 1000000000000\"}],\"isError\":true}") ;; 134
  (data (i32.const 704) "{\"content\":[{\"type\":\"text\",\"text\":\"unknown tool: this module has only add\"}],\"isError\":true}") ;; 92
  (data (i32.const 832) "add: not an ABI v1 request (this module was built for wasmtask ABI v1)\n") ;; 71
  (data (i32.const 928) "adding two integers")                  ;; 19
  (data (i32.const 1024) "{\"abi\":1,\"name\":\"add\",\"tools\":[{\"name\":\"add\",\"title\":\"Add\",\"description\":\"Adds two integers a and b.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":-1000000000000,\"maximum\":1000000000000},\"b\":{\"type\":\"integer\",\"minimum\":-1000000000000,\"maximum\":1000000000000}},\"required\":[\"a\",\"b\"],\"additionalProperties\":false},\"outputSchema\":{\"type\":\"object\",\"properties\":{\"sum\":{\"type\":\"integer\"}},\"required\":[\"sum\"]},\"annotations\":{\"readOnlyHint\":true,\"idempotentHint\":true,\"openWorldHint\":false},\"taskSupport\":\"forbidden\",\"cache\":{\"cacheable\":true}}]}") ;; 570

  ;; write(fd, ptr, len): the whole buffer, looping over short writes.
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

  ;; fail writes a message to stderr and exits with code 2.
  (func $fail (param $ptr i32) (param $len i32)
    (call $write (i32.const 2) (local.get $ptr) (local.get $len))
    (call $proc_exit (i32.const 2)))

  ;; read_all reads stdin to end of file into $IN; fails when it is too big.
  (func $read_all
    (loop $more
      (i32.store (i32.const 0) (i32.add (global.get $IN) (global.get $in_len)))
      (i32.store (i32.const 4) (i32.sub (global.get $IN_CAP) (global.get $in_len)))
      (if (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8))
        (then (call $fail (i32.const 832) (i32.const 71))))
      (global.set $in_len (i32.add (global.get $in_len) (i32.load (i32.const 8))))
      (if (i32.ge_u (global.get $in_len) (global.get $IN_CAP))
        (then (call $fail (i32.const 832) (i32.const 71))))
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

  ;; byte(off): the request's byte at off, or 0 past its end.
  (func $byte (param $off i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $off) (global.get $in_len))
      (then (i32.load8_u (i32.add (global.get $IN) (local.get $off))))
      (else (i32.const 0))))

  (func $skip_ws (param $off i32) (result i32)
    (local $c i32)
    (loop $more
      (local.set $c (call $byte (local.get $off)))
      (if (i32.or (i32.or (i32.eq (local.get $c) (i32.const 32)) (i32.eq (local.get $c) (i32.const 9)))
                  (i32.or (i32.eq (local.get $c) (i32.const 10)) (i32.eq (local.get $c) (i32.const 13))))
        (then (local.set $off (i32.add (local.get $off) (i32.const 1))) (br $more))))
    (local.get $off))

  ;; int_arg(from, key): the integer value of member key ("a" or "b", 3 bytes)
  ;; at or after offset from; sets $ok to 0 when it is missing or not an
  ;; integer of at most 13 digits.
  (func $int_arg (param $from i32) (param $key i32) (result i64)
    (local $off i32) (local $neg i32) (local $digits i32) (local $c i32) (local $v i64)
    (global.set $ok (i32.const 0))
    (local.set $off (local.get $from))
    ;; find the key followed by optional whitespace and a colon
    (block $found
      (loop $search
        (if (i32.ge_u (local.get $off) (global.get $in_len)) (then (return (i64.const 0))))
        (if (call $has (local.get $off) (local.get $key) (i32.const 3))
          (then
            (local.set $c (call $skip_ws (i32.add (local.get $off) (i32.const 3))))
            (if (i32.eq (call $byte (local.get $c)) (i32.const 58)) ;; ':'
              (then (local.set $off (call $skip_ws (i32.add (local.get $c) (i32.const 1)))) (br $found)))))
        (local.set $off (i32.add (local.get $off) (i32.const 1)))
        (br $search)))
    (if (i32.eq (call $byte (local.get $off)) (i32.const 45)) ;; '-'
      (then (local.set $neg (i32.const 1)) (local.set $off (i32.add (local.get $off) (i32.const 1)))))
    (loop $digit
      (local.set $c (call $byte (local.get $off)))
      (if (i32.and (i32.ge_u (local.get $c) (i32.const 48)) (i32.le_u (local.get $c) (i32.const 57)))
        (then
          (local.set $v (i64.add (i64.mul (local.get $v) (i64.const 10))
                                 (i64.extend_i32_u (i32.sub (local.get $c) (i32.const 48)))))
          (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
          (local.set $off (i32.add (local.get $off) (i32.const 1)))
          (br $digit))))
    ;; 1..13 digits, ended by a delimiter (not '.', 'e', 'E'), |v| <= 10^12
    (if (i32.or (i32.eqz (local.get $digits)) (i32.gt_u (local.get $digits) (i32.const 13)))
      (then (return (i64.const 0))))
    (local.set $c (call $byte (call $skip_ws (local.get $off))))
    (if (i32.eqz (i32.or (i32.eq (local.get $c) (i32.const 44)) (i32.eq (local.get $c) (i32.const 125)))) ;; ',' '}'
      (then (return (i64.const 0))))
    (if (i64.gt_u (local.get $v) (i64.const 1000000000000)) (then (return (i64.const 0))))
    (global.set $ok (i32.const 1))
    (if (result i64) (local.get $neg)
      (then (i64.sub (i64.const 0) (local.get $v)))
      (else (local.get $v))))

  ;; itoa(v): writes v in decimal ending at 96; returns the start offset.
  (func $itoa (param $v i64) (result i32)
    (local $p i32) (local $neg i32)
    (local.set $p (i32.const 96))
    (if (i64.lt_s (local.get $v) (i64.const 0))
      (then (local.set $neg (i32.const 1)) (local.set $v (i64.sub (i64.const 0) (local.get $v)))))
    (loop $more
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $more (i64.ne (local.get $v) (i64.const 0))))
    (if (local.get $neg)
      (then (local.set $p (i32.sub (local.get $p) (i32.const 1))) (i32.store8 (local.get $p) (i32.const 45))))
    (local.get $p))

  (func (export "_start")
    (local $a i64) (local $b i64) (local $p i32)
    (call $read_all)
    (if (i32.eqz (call $has (i32.const 0) (i32.const 256) (i32.const 9)))
      (then (call $fail (i32.const 832) (i32.const 71))))
    ;; describe
    (if (call $has (i32.const 9) (i32.const 272) (i32.const 20))
      (then (call $write (i32.const 1) (i32.const 1024) (i32.const 570)) (return)))
    (if (i32.eqz (call $has (i32.const 9) (i32.const 336) (i32.const 16)))
      (then (call $fail (i32.const 832) (i32.const 71))))
    ;; call
    (if (i32.eqz (call $has (i32.const 9) (i32.const 304) (i32.const 28)))
      (then (call $write (i32.const 1) (i32.const 704) (i32.const 92)) (return)))
    (call $log (i32.const 1) (i32.const 928) (i32.const 19))
    (local.set $a (call $int_arg (i32.const 37) (i32.const 352)))
    (if (i32.eqz (global.get $ok))
      (then (call $write (i32.const 1) (i32.const 512) (i32.const 134)) (return)))
    (local.set $b (call $int_arg (i32.const 37) (i32.const 356)))
    (if (i32.eqz (global.get $ok))
      (then (call $write (i32.const 1) (i32.const 512) (i32.const 134)) (return)))
    (local.set $p (call $itoa (i64.add (local.get $a) (local.get $b))))
    (call $write (i32.const 1) (i32.const 384) (i32.const 35))
    (call $write (i32.const 1) (local.get $p) (i32.sub (i32.const 96) (local.get $p)))
    (call $write (i32.const 1) (i32.const 432) (i32.const 31))
    (call $write (i32.const 1) (local.get $p) (i32.sub (i32.const 96) (local.get $p)))
    (call $write (i32.const 1) (i32.const 472) (i32.const 2)))
)
