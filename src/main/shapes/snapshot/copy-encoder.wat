;; The byte loop of CopyEncoder (copy-encoder.ts): COPY text lines → insert messages, one JSON line each.
;; Build: npm run build:wasm (writes copy-encoder-wasm.ts). JavaScript lays out memory and calls:
;;   configure(...)  once per shape: where the message pieces and the field tables are;
;;   encode(in, inEnd, out, rowEnds, base) → rows encoded, each row's end (minus base) stored at rowEnds; stores at
;;   address 0 the input position reached (the end, or the start of a line it leaves to JavaScript: one that is not
;;   JSON-safe) and at address 4 the output end.
(module
  (memory (export "memory") 1)
  ;; "true" "false" null, with their JSON quotes
  (data (i32.const 16) "\22true\22\22false\22null")

  (global $fieldCount (mut i32) (i32.const 0))
  (global $valueCount (mut i32) (i32.const 0))
  (global $keyCount (mut i32) (i32.const 0))
  (global $head (mut i32) (i32.const 0))
  (global $headLen (mut i32) (i32.const 0))
  (global $valueHead (mut i32) (i32.const 0))
  (global $valueHeadLen (mut i32) (i32.const 0))
  ;; (pointer, length) of each value's `,"name":` piece
  (global $names (mut i32) (i32.const 0))
  ;; one i32 per value: 1 for a boolean column
  (global $bools (mut i32) (i32.const 0))
  ;; one i32 per key column: its field index
  (global $keyIndexes (mut i32) (i32.const 0))
  ;; field bounds of the line being encoded, one i32 each
  (global $starts (mut i32) (i32.const 0))
  (global $ends (mut i32) (i32.const 0))
  (global $lineEnd (mut i32) (i32.const 0))

  (func (export "configure")
    (param $fieldCount i32) (param $valueCount i32) (param $keyCount i32)
    (param $head i32) (param $headLen i32) (param $valueHead i32) (param $valueHeadLen i32)
    (param $names i32) (param $bools i32) (param $keyIndexes i32) (param $starts i32) (param $ends i32)
    (global.set $fieldCount (local.get $fieldCount))
    (global.set $valueCount (local.get $valueCount))
    (global.set $keyCount (local.get $keyCount))
    (global.set $head (local.get $head))
    (global.set $headLen (local.get $headLen))
    (global.set $valueHead (local.get $valueHead))
    (global.set $valueHeadLen (local.get $valueHeadLen))
    (global.set $names (local.get $names))
    (global.set $bools (local.get $bools))
    (global.set $keyIndexes (local.get $keyIndexes))
    (global.set $starts (local.get $starts))
    (global.set $ends (local.get $ends)))

  ;; Field bounds of the line at $at into $starts/$ends, its end into $lineEnd; returns bits:
  ;; 1 not JSON-safe (or the wrong number of fields, or no newline: the rest of the line is not scanned), 2 has `"`,
  ;; 4 has `/`. Sixteen bytes at a time: only tabs, newlines, `"`, `/`, backslashes and control bytes stop the scan.
  ;; It may load up to 15 bytes past $inEnd (JavaScript leaves room there) but never looks at them.
  (func $scan (param $at i32) (param $inEnd i32) (result i32)
    (local $byte i32) (local $field i32) (local $traits i32) (local $stops i32) (local $stop i32) (local $bytes v128)
    (i32.store (global.get $starts) (local.get $at))
    (block $line
      (loop $next
        (if (i32.ge_u (local.get $at) (local.get $inEnd))
          (then (local.set $traits (i32.or (local.get $traits) (i32.const 1))) (br $line)))
        (local.set $bytes (v128.load (local.get $at)))
        (local.set $stops (i8x16.bitmask (v128.or
          (v128.or (i8x16.lt_u (local.get $bytes) (i8x16.splat (i32.const 32)))
                   (i8x16.eq (local.get $bytes) (i8x16.splat (i32.const 34))))
          (v128.or (i8x16.eq (local.get $bytes) (i8x16.splat (i32.const 47)))
                   (i8x16.eq (local.get $bytes) (i8x16.splat (i32.const 92)))))))
        (if (i32.lt_u (i32.sub (local.get $inEnd) (local.get $at)) (i32.const 16))
          (then (local.set $stops (i32.and (local.get $stops)
            (i32.sub (i32.shl (i32.const 1) (i32.sub (local.get $inEnd) (local.get $at))) (i32.const 1))))))
        (block $vectorDone
          (loop $nextStop
            (br_if $vectorDone (i32.eqz (local.get $stops)))
            (local.set $stop (i32.add (local.get $at) (i32.ctz (local.get $stops))))
            (local.set $stops (i32.and (local.get $stops) (i32.sub (local.get $stops) (i32.const 1))))
            (local.set $byte (i32.load8_u (local.get $stop)))
            (if (i32.eq (local.get $byte) (i32.const 10))
              (then (local.set $at (local.get $stop)) (br $line)))
            (if (i32.eq (local.get $byte) (i32.const 9))
              (then
                (if (i32.eq (i32.add (local.get $field) (i32.const 1)) (global.get $fieldCount))
                  (then (local.set $traits (i32.or (local.get $traits) (i32.const 1))) (br $line)))
                (i32.store (i32.add (global.get $ends) (i32.shl (local.get $field) (i32.const 2))) (local.get $stop))
                (local.set $field (i32.add (local.get $field) (i32.const 1)))
                (i32.store (i32.add (global.get $starts) (i32.shl (local.get $field) (i32.const 2))) (i32.add (local.get $stop) (i32.const 1)))
                (br $nextStop)))
            (if (i32.lt_u (local.get $byte) (i32.const 32))
              (then (local.set $traits (i32.or (local.get $traits) (i32.const 1))) (br $line)))
            (if (i32.eq (local.get $byte) (i32.const 34))
              (then (local.set $traits (i32.or (local.get $traits) (i32.const 2))) (br $nextStop)))
            (if (i32.eq (local.get $byte) (i32.const 47))
              (then (local.set $traits (i32.or (local.get $traits) (i32.const 4))) (br $nextStop)))
            ;; a backslash: COPY escapes every backslash in data, so the next byte is an escape letter (\v has no JSON
            ;; form); it is skipped, so that an escaped backslash is not read as the start of an escape
            (br_if $nextStop (i32.ge_u (i32.add (local.get $stop) (i32.const 1)) (local.get $inEnd)))
            (local.set $byte (i32.load8_u (i32.add (local.get $stop) (i32.const 1))))
            (if (i32.eq (local.get $byte) (i32.const 118))
              (then (local.set $traits (i32.or (local.get $traits) (i32.const 1))) (br $line)))
            (br_if $nextStop (i32.eq (local.get $byte) (i32.const 10)))
            (local.set $at (i32.add (local.get $stop) (i32.const 2)))
            (br $next)))
        (local.set $at (i32.add (local.get $at) (i32.const 16)))
        (br $next)))
    (global.set $lineEnd (local.get $at))
    (if (i32.ne (local.get $field) (i32.sub (global.get $fieldCount) (i32.const 1)))
      (then (local.set $traits (i32.or (local.get $traits) (i32.const 1)))))
    (i32.store (i32.add (global.get $ends) (i32.shl (local.get $field) (i32.const 2))) (local.get $at))
    (local.get $traits))

  ;; Copies field [$start, $end) to $out with `"` escaped and, when $slashes, `/` doubled; returns the new $out. For
  ;; lines with a `"` or `/` only: $row copies the others itself.
  (func $field (param $out i32) (param $start i32) (param $end i32) (param $quotes i32) (param $slashes i32) (result i32)
    (local $byte i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $start) (local.get $end)))
        (local.set $byte (i32.load8_u (local.get $start)))
        (if (i32.eq (local.get $byte) (i32.const 34))
          (then (i32.store8 (local.get $out) (i32.const 92)) (local.set $out (i32.add (local.get $out) (i32.const 1)))))
        (if (i32.and (local.get $slashes) (i32.eq (local.get $byte) (i32.const 47)))
          (then (i32.store8 (local.get $out) (i32.const 47)) (local.set $out (i32.add (local.get $out) (i32.const 1)))))
        (i32.store8 (local.get $out) (local.get $byte))
        (local.set $out (i32.add (local.get $out) (i32.const 1)))
        (local.set $start (i32.add (local.get $start) (i32.const 1)))
        (br $next)))
    (local.get $out))

  ;; One insert message for the line just scanned; returns the new $out. Each piece and plain field is copied inline,
  ;; sixteen bytes at a time, from $from to $out until $to (it may write up to 16 bytes past $to, where the next piece
  ;; goes): the pieces and fields are short, and calls to small functions took ~40% of the encoding's time.
  (func $row (param $out i32) (param $traits i32) (result i32)
    (local $position i32) (local $index i32) (local $start i32) (local $end i32) (local $first i32)
    (local $quotes i32) (local $slashes i32) (local $from i32) (local $to i32)
    (local.set $quotes (i32.and (local.get $traits) (i32.const 2)))
    (local.set $slashes (i32.ne (i32.and (local.get $traits) (i32.const 4)) (i32.const 0)))
    (local.set $from (global.get $head))
    (local.set $to (i32.add (local.get $out) (global.get $headLen)))
    (loop $copyHead
      (v128.store (local.get $out) (v128.load (local.get $from)))
      (local.set $out (i32.add (local.get $out) (i32.const 16)))
      (local.set $from (i32.add (local.get $from) (i32.const 16)))
      (br_if $copyHead (i32.lt_u (local.get $out) (local.get $to))))
    (local.set $out (local.get $to))
    (block $keysDone
      (loop $key
        (br_if $keysDone (i32.ge_u (local.get $position) (global.get $keyCount)))
        (if (local.get $position) (then
          (i32.store8 (local.get $out) (i32.const 47))
          (local.set $out (i32.add (local.get $out) (i32.const 1)))))
        (local.set $index (i32.load (i32.add (global.get $keyIndexes) (i32.shl (local.get $position) (i32.const 2)))))
        (local.set $start (i32.load (i32.add (global.get $starts) (i32.shl (local.get $index) (i32.const 2)))))
        (local.set $end (i32.load (i32.add (global.get $ends) (i32.shl (local.get $index) (i32.const 2)))))
        (if (i32.and
              (i32.eq (i32.sub (local.get $end) (local.get $start)) (i32.const 2))
              (i32.eq (i32.load16_u (local.get $start)) (i32.const 0x4e5c)))
          (then
            ;; \N: a NULL key part is `_`
            (i32.store8 (local.get $out) (i32.const 95))
            (local.set $out (i32.add (local.get $out) (i32.const 1))))
          (else
            ;; \" around the key part, inside the key's JSON string
            (i32.store16 (local.get $out) (i32.const 0x225c))
            (local.set $out (i32.add (local.get $out) (i32.const 2)))
            (if (i32.or (local.get $quotes) (local.get $slashes))
              (then (local.set $out (call $field (local.get $out) (local.get $start) (local.get $end) (local.get $quotes) (local.get $slashes))))
              (else
                (local.set $from (local.get $start))
                (local.set $to (i32.add (local.get $out) (i32.sub (local.get $end) (local.get $start))))
                (loop $copyKey
                  (v128.store (local.get $out) (v128.load (local.get $from)))
                  (local.set $out (i32.add (local.get $out) (i32.const 16)))
                  (local.set $from (i32.add (local.get $from) (i32.const 16)))
                  (br_if $copyKey (i32.lt_u (local.get $out) (local.get $to))))
                (local.set $out (local.get $to))))
            (i32.store16 (local.get $out) (i32.const 0x225c))
            (local.set $out (i32.add (local.get $out) (i32.const 2)))))
        (local.set $position (i32.add (local.get $position) (i32.const 1)))
        (br $key)))
    (local.set $from (global.get $valueHead))
    (local.set $to (i32.add (local.get $out) (global.get $valueHeadLen)))
    (loop $copyValueHead
      (v128.store (local.get $out) (v128.load (local.get $from)))
      (local.set $out (i32.add (local.get $out) (i32.const 16)))
      (local.set $from (i32.add (local.get $from) (i32.const 16)))
      (br_if $copyValueHead (i32.lt_u (local.get $out) (local.get $to))))
    (local.set $out (local.get $to))
    (local.set $index (i32.const 0))
    (block $valuesDone
      (loop $value
        (br_if $valuesDone (i32.ge_u (local.get $index) (global.get $valueCount)))
        ;; the value's `,"name":`
        (local.set $from (i32.load (i32.add (global.get $names) (i32.shl (local.get $index) (i32.const 3)))))
        (local.set $to (i32.add (local.get $out)
          (i32.load (i32.add (global.get $names) (i32.add (i32.shl (local.get $index) (i32.const 3)) (i32.const 4))))))
        (loop $copyName
          (v128.store (local.get $out) (v128.load (local.get $from)))
          (local.set $out (i32.add (local.get $out) (i32.const 16)))
          (local.set $from (i32.add (local.get $from) (i32.const 16)))
          (br_if $copyName (i32.lt_u (local.get $out) (local.get $to))))
        (local.set $out (local.get $to))
        (local.set $start (i32.load (i32.add (global.get $starts) (i32.shl (local.get $index) (i32.const 2)))))
        (local.set $end (i32.load (i32.add (global.get $ends) (i32.shl (local.get $index) (i32.const 2)))))
        (local.set $first (i32.load8_u (local.get $start)))
        ;; what follows: null, "true" or "false" (a boolean's t or f), or the field as a JSON string
        (local.set $from (i32.const 0))
        (if (i32.and
              (i32.eq (i32.sub (local.get $end) (local.get $start)) (i32.const 2))
              (i32.eq (i32.load16_u (local.get $start)) (i32.const 0x4e5c)))
          (then (local.set $from (i32.const 29)) (local.set $to (i32.const 4)))
          (else (if (i32.and
                      (i32.and
                        (i32.load (i32.add (global.get $bools) (i32.shl (local.get $index) (i32.const 2))))
                        (i32.eq (i32.sub (local.get $end) (local.get $start)) (i32.const 1)))
                      (i32.or (i32.eq (local.get $first) (i32.const 116)) (i32.eq (local.get $first) (i32.const 102))))
            (then (if (i32.eq (local.get $first) (i32.const 116))
              (then (local.set $from (i32.const 16)) (local.set $to (i32.const 6)))
              (else (local.set $from (i32.const 22)) (local.set $to (i32.const 7))))))))
        (if (local.get $from)
          (then
            (local.set $to (i32.add (local.get $out) (local.get $to)))
            (v128.store (local.get $out) (v128.load (local.get $from)))
            (local.set $out (local.get $to)))
          (else
            (i32.store8 (local.get $out) (i32.const 34))
            (local.set $out (i32.add (local.get $out) (i32.const 1)))
            (if (local.get $quotes)
              (then (local.set $out (call $field (local.get $out) (local.get $start) (local.get $end) (local.get $quotes) (i32.const 0))))
              (else
                (local.set $from (local.get $start))
                (local.set $to (i32.add (local.get $out) (i32.sub (local.get $end) (local.get $start))))
                (loop $copyField
                  (v128.store (local.get $out) (v128.load (local.get $from)))
                  (local.set $out (i32.add (local.get $out) (i32.const 16)))
                  (local.set $from (i32.add (local.get $from) (i32.const 16)))
                  (br_if $copyField (i32.lt_u (local.get $out) (local.get $to))))
                (local.set $out (local.get $to))))
            (i32.store8 (local.get $out) (i32.const 34))
            (local.set $out (i32.add (local.get $out) (i32.const 1)))))
        (local.set $index (i32.add (local.get $index) (i32.const 1)))
        (br $value)))
    ;; }}\n
    (i32.store16 (local.get $out) (i32.const 0x7d7d))
    (i32.store8 (i32.add (local.get $out) (i32.const 2)) (i32.const 10))
    (i32.add (local.get $out) (i32.const 3)))

  (func (export "encode") (param $in i32) (param $inEnd i32) (param $out i32) (param $rowEnds i32) (param $base i32) (result i32)
    (local $rows i32) (local $traits i32)
    (block $stop
      (loop $line
        (br_if $stop (i32.ge_u (local.get $in) (local.get $inEnd)))
        (local.set $traits (call $scan (local.get $in) (local.get $inEnd)))
        (br_if $stop (i32.and (local.get $traits) (i32.const 1)))
        (local.set $out (call $row (local.get $out) (local.get $traits)))
        (i32.store (i32.add (local.get $rowEnds) (i32.shl (local.get $rows) (i32.const 2))) (i32.sub (local.get $out) (local.get $base)))
        (local.set $rows (i32.add (local.get $rows) (i32.const 1)))
        (local.set $in (i32.add (global.get $lineEnd) (i32.const 1)))
        (br $line)))
    (i32.store (i32.const 0) (local.get $in))
    (i32.store (i32.const 4) (local.get $out))
    (local.get $rows))
)
