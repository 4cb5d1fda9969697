;; stackbomb: recursion and function references that make the host allocate
;; outside linear memory, and their combinations with memory growth.
;;   frames    recursion without end through a frame of 128 i64 values live
;;             across the recursive call (the compiler spills each to a slot
;;             of its own, the interpreter keeps them on its operand stack)
;;   refs      ref.func in a loop without end (the compiler engine allocates
;;             a function reference at each, kept with the instance)
;;   growdeep  grows memory until refused (writing every page, as the
;;             growth of every tool below does), then recurses without end
;;   deepgrow  recurses 500 deep and back, then grows memory until refused
;;             and answers the pages it holds
;;   plaingrow grows memory until refused and answers the pages it holds
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 4096) "{\"abi\":1,\"tools\":[{\"name\":\"frames\",\"description\":\"Recurses through big frames.\"},{\"name\":\"refs\",\"description\":\"Makes function references.\"},{\"name\":\"growdeep\",\"description\":\"Grows, then recurses.\"},{\"name\":\"deepgrow\",\"description\":\"Recurses, then grows.\"},{\"name\":\"plaingrow\",\"description\":\"Grows.\"}]}\00")
  (data (i32.const 8192) "{\"content\":[{\"type\":\"text\",\"text\":\"\00")
  (data (i32.const 8256) "\"}]}\00")
  (func $strlen (param $p i32) (result i32) (local $n i32)
    (block $d (loop $l
      (br_if $d (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $l)))
    (local.get $n))
  (func $write (param $fd i32) (param $p i32) (param $n i32) (result i32)
    (i32.store (i32.const 0) (local.get $p))
    (i32.store (i32.const 4) (local.get $n))
    (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8)))
  (func $puts (param $fd i32) (param $p i32) (result i32)
    (call $write (local.get $fd) (local.get $p) (call $strlen (local.get $p))))
  (func $describe (result i32)
    (i32.store (i32.const 0) (i32.const 1024))
    (i32.store (i32.const 4) (i32.const 2048))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))
    (i32.eq (i32.load8_u (i32.const 1043)) (i32.const 100)))
  ;; $putnum writes n in decimal to stdout
  (func $putnum (param $n i32) (local $p i32)
    (local.set $p (i32.const 12300))
    (loop $d
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p) (i32.add (i32.const 48) (i32.rem_u (local.get $n) (i32.const 10))))
      (local.set $n (i32.div_u (local.get $n) (i32.const 10)))
      (br_if $d (local.get $n)))
    (drop (call $write (i32.const 1) (local.get $p) (i32.sub (i32.const 12300) (local.get $p)))))
  (func $answer (param $n i32)
    (drop (call $puts (i32.const 1) (i32.const 8192)))
    (call $putnum (local.get $n))
    (drop (call $puts (i32.const 1) (i32.const 8256))))
  ;; $grow grows memory a page at a time until refused and writes every
  ;; 4 KiB of each new page, so that the host holds it.
  (func $grow (local $p i32) (local $a i32)
    (block $refused (loop $g
      (local.set $p (memory.grow (i32.const 1)))
      (br_if $refused (i32.eq (local.get $p) (i32.const -1)))
      (local.set $a (i32.shl (local.get $p) (i32.const 16)))
      (loop $w
        (i32.store8 (local.get $a) (i32.const 1))
        (local.set $a (i32.add (local.get $a) (i32.const 4096)))
        (br_if $w (i32.and (local.get $a) (i32.const 0xffff))))
      (br $g))))
  (func $down (param $n i64) (result i64)
    (i64.add (call $down (i64.add (local.get $n) (i64.const 1))) (local.get $n)))
  (func $to (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 0))
      (else (i32.add (call $to (i32.sub (local.get $n) (i32.const 1))) (i32.const 1)))))
  (func $big (param $n i64) (result i64)
    (i64.add (local.get $n) (i64.const 0))
    (i64.add (local.get $n) (i64.const 1))
    (i64.add (local.get $n) (i64.const 2))
    (i64.add (local.get $n) (i64.const 3))
    (i64.add (local.get $n) (i64.const 4))
    (i64.add (local.get $n) (i64.const 5))
    (i64.add (local.get $n) (i64.const 6))
    (i64.add (local.get $n) (i64.const 7))
    (i64.add (local.get $n) (i64.const 8))
    (i64.add (local.get $n) (i64.const 9))
    (i64.add (local.get $n) (i64.const 10))
    (i64.add (local.get $n) (i64.const 11))
    (i64.add (local.get $n) (i64.const 12))
    (i64.add (local.get $n) (i64.const 13))
    (i64.add (local.get $n) (i64.const 14))
    (i64.add (local.get $n) (i64.const 15))
    (i64.add (local.get $n) (i64.const 16))
    (i64.add (local.get $n) (i64.const 17))
    (i64.add (local.get $n) (i64.const 18))
    (i64.add (local.get $n) (i64.const 19))
    (i64.add (local.get $n) (i64.const 20))
    (i64.add (local.get $n) (i64.const 21))
    (i64.add (local.get $n) (i64.const 22))
    (i64.add (local.get $n) (i64.const 23))
    (i64.add (local.get $n) (i64.const 24))
    (i64.add (local.get $n) (i64.const 25))
    (i64.add (local.get $n) (i64.const 26))
    (i64.add (local.get $n) (i64.const 27))
    (i64.add (local.get $n) (i64.const 28))
    (i64.add (local.get $n) (i64.const 29))
    (i64.add (local.get $n) (i64.const 30))
    (i64.add (local.get $n) (i64.const 31))
    (i64.add (local.get $n) (i64.const 32))
    (i64.add (local.get $n) (i64.const 33))
    (i64.add (local.get $n) (i64.const 34))
    (i64.add (local.get $n) (i64.const 35))
    (i64.add (local.get $n) (i64.const 36))
    (i64.add (local.get $n) (i64.const 37))
    (i64.add (local.get $n) (i64.const 38))
    (i64.add (local.get $n) (i64.const 39))
    (i64.add (local.get $n) (i64.const 40))
    (i64.add (local.get $n) (i64.const 41))
    (i64.add (local.get $n) (i64.const 42))
    (i64.add (local.get $n) (i64.const 43))
    (i64.add (local.get $n) (i64.const 44))
    (i64.add (local.get $n) (i64.const 45))
    (i64.add (local.get $n) (i64.const 46))
    (i64.add (local.get $n) (i64.const 47))
    (i64.add (local.get $n) (i64.const 48))
    (i64.add (local.get $n) (i64.const 49))
    (i64.add (local.get $n) (i64.const 50))
    (i64.add (local.get $n) (i64.const 51))
    (i64.add (local.get $n) (i64.const 52))
    (i64.add (local.get $n) (i64.const 53))
    (i64.add (local.get $n) (i64.const 54))
    (i64.add (local.get $n) (i64.const 55))
    (i64.add (local.get $n) (i64.const 56))
    (i64.add (local.get $n) (i64.const 57))
    (i64.add (local.get $n) (i64.const 58))
    (i64.add (local.get $n) (i64.const 59))
    (i64.add (local.get $n) (i64.const 60))
    (i64.add (local.get $n) (i64.const 61))
    (i64.add (local.get $n) (i64.const 62))
    (i64.add (local.get $n) (i64.const 63))
    (i64.add (local.get $n) (i64.const 64))
    (i64.add (local.get $n) (i64.const 65))
    (i64.add (local.get $n) (i64.const 66))
    (i64.add (local.get $n) (i64.const 67))
    (i64.add (local.get $n) (i64.const 68))
    (i64.add (local.get $n) (i64.const 69))
    (i64.add (local.get $n) (i64.const 70))
    (i64.add (local.get $n) (i64.const 71))
    (i64.add (local.get $n) (i64.const 72))
    (i64.add (local.get $n) (i64.const 73))
    (i64.add (local.get $n) (i64.const 74))
    (i64.add (local.get $n) (i64.const 75))
    (i64.add (local.get $n) (i64.const 76))
    (i64.add (local.get $n) (i64.const 77))
    (i64.add (local.get $n) (i64.const 78))
    (i64.add (local.get $n) (i64.const 79))
    (i64.add (local.get $n) (i64.const 80))
    (i64.add (local.get $n) (i64.const 81))
    (i64.add (local.get $n) (i64.const 82))
    (i64.add (local.get $n) (i64.const 83))
    (i64.add (local.get $n) (i64.const 84))
    (i64.add (local.get $n) (i64.const 85))
    (i64.add (local.get $n) (i64.const 86))
    (i64.add (local.get $n) (i64.const 87))
    (i64.add (local.get $n) (i64.const 88))
    (i64.add (local.get $n) (i64.const 89))
    (i64.add (local.get $n) (i64.const 90))
    (i64.add (local.get $n) (i64.const 91))
    (i64.add (local.get $n) (i64.const 92))
    (i64.add (local.get $n) (i64.const 93))
    (i64.add (local.get $n) (i64.const 94))
    (i64.add (local.get $n) (i64.const 95))
    (i64.add (local.get $n) (i64.const 96))
    (i64.add (local.get $n) (i64.const 97))
    (i64.add (local.get $n) (i64.const 98))
    (i64.add (local.get $n) (i64.const 99))
    (i64.add (local.get $n) (i64.const 100))
    (i64.add (local.get $n) (i64.const 101))
    (i64.add (local.get $n) (i64.const 102))
    (i64.add (local.get $n) (i64.const 103))
    (i64.add (local.get $n) (i64.const 104))
    (i64.add (local.get $n) (i64.const 105))
    (i64.add (local.get $n) (i64.const 106))
    (i64.add (local.get $n) (i64.const 107))
    (i64.add (local.get $n) (i64.const 108))
    (i64.add (local.get $n) (i64.const 109))
    (i64.add (local.get $n) (i64.const 110))
    (i64.add (local.get $n) (i64.const 111))
    (i64.add (local.get $n) (i64.const 112))
    (i64.add (local.get $n) (i64.const 113))
    (i64.add (local.get $n) (i64.const 114))
    (i64.add (local.get $n) (i64.const 115))
    (i64.add (local.get $n) (i64.const 116))
    (i64.add (local.get $n) (i64.const 117))
    (i64.add (local.get $n) (i64.const 118))
    (i64.add (local.get $n) (i64.const 119))
    (i64.add (local.get $n) (i64.const 120))
    (i64.add (local.get $n) (i64.const 121))
    (i64.add (local.get $n) (i64.const 122))
    (i64.add (local.get $n) (i64.const 123))
    (i64.add (local.get $n) (i64.const 124))
    (i64.add (local.get $n) (i64.const 125))
    (i64.add (local.get $n) (i64.const 126))
    (i64.add (local.get $n) (i64.const 127))
    (call $big (i64.add (local.get $n) (i64.const 1)))
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
    i64.add
  )
  (func $target)
  (elem declare func $target)
  (func (export "_start")
    (if (call $describe) (then (drop (call $puts (i32.const 1) (i32.const 4096))) (return)))
    ;; tools by the first letter of the name
    (if (i32.eq (i32.load8_u (i32.const 1057)) (i32.const 102)) (then ;; frames
      (drop (call $big (i64.const 0))) (return)))
    (if (i32.eq (i32.load8_u (i32.const 1057)) (i32.const 114)) (then ;; refs
      (loop $l (drop (ref.func $target)) (br $l))))
    (if (i32.eq (i32.load8_u (i32.const 1057)) (i32.const 112)) (then ;; plaingrow
      (call $grow) (call $answer (memory.size)) (return)))
    (if (i32.eq (i32.load8_u (i32.const 1057)) (i32.const 103)) (then ;; growdeep
      (call $grow) (drop (call $down (i64.const 0))) (return)))
    ;; deepgrow
    (drop (call $to (i32.const 500)))
    (call $grow)
    (call $answer (memory.size)))
)
