;; Test module for the data-section rewrite (datamerge.go): active
;; segments around a passive one that memory.init copies and data.drop
;; drops, so the rewrite must keep the passive segment's index.
(module
  (memory (export "memory") 1)
  (data (i32.const 100) "ab")
  (data (i32.const 104) "cd")
  (data $p "PASSIVE")
  (data (i32.const 102) "XY")
  (data (i32.const 200) "ef")
  ;; copy the passive segment to 300 and drop it; then copying it again
  ;; must trap (a dropped segment has length 0)
  (func (export "init") (memory.init $p (i32.const 300) (i32.const 0) (i32.const 7)))
  (func (export "drop") (data.drop $p))
  ;; memory.init of a zero length at offset 0 of an active segment: valid
  ;; after instantiation dropped it
  (func (export "init_active") (memory.init 1 (i32.const 0) (i32.const 0) (i32.const 0))))
