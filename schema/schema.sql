-- heapattach profile database, schema version 14.
--
-- Written by heapattach (src/db/db.c, one writer thread per attacher), read by
-- heapdiff and by anyone with the sqlite3 CLI:
--
--     sqlite3 -header -column heapattach-myservice-4242.db \
--       'SELECT * FROM growth_text WHERE from_snapshot = 1 AND to_snapshot = 7
--        ORDER BY live_bytes_delta DESC LIMIT 10'
--
-- The file is identified by PRAGMA application_id = 1214603632 (0x48656170,
-- "Heap") and by the meta table (format = 'heapattach', schema_version = 14);
-- a program reading the file checks both and refuses versions it does not
-- know.  Version 2 added the views leak_trend and leak_suspects, version 3
-- the column snapshots.sample_interval, version 4 the snapshots with reason
-- 'attach' and 'peak' and left the peak out of leak_trend, version 5 the
-- kinds 'rss' and 'swap' (resident memory by first-touch call path,
-- heapattach --rss) with their snapshot columns, version 6 the column
-- sessions.hostname, version 7 the columns snapshots.frames and fp_frames,
-- version 8 the column sessions.python, version 9 the column
-- snapshots.rss_read_time, version 10 the memory breakdown, version 11
-- the reachability tables, version 12 the buckets laid out by snapshot with
-- keyframes (snapshots.base_id), version 13 the table memory_pinning,
-- version 14 the snapshots that hold totals only (snapshots.paths; all at
-- the end of this file); heapattach upgrades an older file in place when
-- it opens it for writing, and heapdiff reads all fourteen versions.  The
-- writer keeps the file in WAL mode while it writes, so readers (heapdiff,
-- sqlite3) can query it meanwhile, and a crash of the writer loses at most
-- the snapshot in progress; when its session ends it puts the file back to a
-- rollback journal, so that a finished database is one file.
--
-- Model.  A session is one attachment to one process.  The attacher keeps,
-- for every callstack and kind of memory, CUMULATIVE values since the session
-- began (allocated, freed and live objects and bytes; unbiased estimates from
-- sampling, hence REAL).  A snapshot stores only the buckets whose values
-- changed since the previous snapshot of the same session, so
--
--     the value of a bucket at snapshot S is its latest row at or before S
--     in the session of S (and it does not exist before its first row).
--
-- Since version 12 some snapshots are keyframes that hold a row for every
-- bucket, and that latest row is found in the snapshots base_id .. S (see
-- the version 12 additions).  The view bucket_at does this lookup; use it
-- (or the views built on it) rather than reading the buckets table directly.
--
-- Bucket values of 1024 and more are written rounded to whole numbers
-- (SQLite then stores them as integers of 1 to 6 bytes; the error is below
-- 0.05%, far below the sampling error); smaller ones keep their fraction.
--
-- Snapshots of a session (heapattach 0.1 and later; reason column):
--   'attach'   the first: the baseline, taken when the agent was ready; it
--              has no bucket rows (every bucket zero), only the RSS and the
--              counters of that moment.  "What grew since attach" is the
--              growth from it to the last snapshot.
--   'periodic' dense at first (1, 2, 3, 5, 7 s after attach, then 10, 20,
--              30, 50, 70 s... while shorter than --snapshot-every), then
--              every --snapshot-every seconds; 'signal' on SIGUSR1;
--              'live' on the s key of heapattach --live;
--   'peak'     at most one: the moment the estimated live total (heap and
--              mmap together) was highest, kept by the attacher as the
--              records arrived, when no other snapshot holds it; see below;
--   'detach', 'exit' or 'exec': the last, after every record was read.
--
-- The peak snapshot is written at the end of the session, just before the
-- last snapshot, so its id is the second highest of the session while its
-- time is that of the peak, earlier than the snapshots around it.  Its
-- buckets follow the rule above (the latest row at or before it), and the
-- last snapshot writes again every bucket the peak snapshot has a row for:
-- a reader that leaves out reason = 'peak' sees the session exactly as if
-- there were no peak snapshot.  Order a session's snapshots by time, not
-- by id, to draw them over time.
--
-- Conventions: times are unix times in seconds (REAL); sizes are bytes;
-- unknown text values are stored as '' (never NULL: they are part of the
-- UNIQUE keys used for interning); ids are INTEGER PRIMARY KEYs and grow
-- monotonically, so within a session a higher snapshot id is a later one
-- (but for the peak snapshot).
--
-- Growing.  A new kind of memory is a row of kinds, not a schema change.
-- The rows of one snapshot are one range of the buckets primary key
-- (session, snapshot, stack, kind) since version 12 (before, the history of
-- one callstack was).  Any change to the tables or
-- views bumps schema_version; readers refuse a version they do not know.
-- Additions of a new version go at the end, after a line
-- "-- Schema version N additions.", which is what the upgrade runs.

PRAGMA application_id = 1214603632;

-- Identification of the file: format = 'heapattach', schema_version = '14'.
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('format', 'heapattach'), ('schema_version', '14');

-- Kinds of memory a bucket counts: 0 heap (malloc family), 1 mmap; since
-- version 5 also 2 rss and 3 swap (see the version 5 additions).
CREATE TABLE kinds (
	id   INTEGER PRIMARY KEY,
	name TEXT NOT NULL UNIQUE
);
INSERT INTO kinds (id, name) VALUES (0, 'heap'), (1, 'mmap');

-- One attachment to one process.  end_time is NULL while the attacher runs,
-- and stays NULL if it died without detaching cleanly.
CREATE TABLE sessions (
	id              INTEGER PRIMARY KEY,
	pid             INTEGER NOT NULL,
	comm            TEXT NOT NULL DEFAULT '',   -- /proc/PID/comm
	exe             TEXT NOT NULL DEFAULT '',   -- /proc/PID/exe
	sample_interval INTEGER NOT NULL,           -- mean sampling interval, bytes
	start_time      REAL NOT NULL,
	end_time        REAL
);

-- A loaded object (executable or shared library); path '' = unknown
-- (anonymous or JIT memory), path 'jit' = JIT code named by the target's
-- perf map (/tmp/perf-PID.map: the frame's function is the name the JIT
-- gave it, as bytes, and rel_pc the offset in that code; reports show
-- [jit]).  build_id is lowercase hex, '' if none.
CREATE TABLE modules (
	id       INTEGER PRIMARY KEY,
	path     TEXT NOT NULL,
	build_id TEXT NOT NULL DEFAULT '',
	UNIQUE (path, build_id)
);

-- A symbolized frame.  rel_pc is the program counter relative to the
-- module's load base (what addr2line/eu-addr2line take with the module's
-- file), kept so that a profile can be re-symbolized later.  An inlined
-- function gets its own frame (inlined = 1) with the same module and rel_pc
-- as the frame it was inlined into, which follows it in the stack.
-- function, file: '' = unknown; line: 0 = unknown.  The frame of module
-- path '', rel_pc 0 and function '(stack not unwound past here)' ends a
-- stack whose walk failed: before it stands the program's call of the
-- allocation function, all that was known.
CREATE TABLE frames (
	id        INTEGER PRIMARY KEY,
	module_id INTEGER NOT NULL REFERENCES modules (id),
	rel_pc    INTEGER NOT NULL,
	function  TEXT NOT NULL DEFAULT '',         -- demangled
	file      TEXT NOT NULL DEFAULT '',
	line      INTEGER NOT NULL DEFAULT 0,
	inlined   INTEGER NOT NULL DEFAULT 0,
	UNIQUE (module_id, rel_pc, function, file, line, inlined)
);

-- An interned callstack.  hash is a 64-bit hash of the content of its
-- frames (module path and build-id, rel_pc, function, file, line, inlined),
-- so the same callstack gets the same id in every session of the file.
CREATE TABLE stacks (
	id    INTEGER PRIMARY KEY,
	hash  INTEGER NOT NULL UNIQUE,
	depth INTEGER NOT NULL
);

-- The frames of a stack: pos 0 is the leaf (the code that called the
-- allocator), pos depth-1 the outermost frame (main, thread start...).
CREATE TABLE stack_frames (
	stack_id INTEGER NOT NULL REFERENCES stacks (id),
	pos      INTEGER NOT NULL,
	frame_id INTEGER NOT NULL REFERENCES frames (id),
	PRIMARY KEY (stack_id, pos)
) WITHOUT ROWID;
CREATE INDEX stack_frames_frame ON stack_frames (frame_id);

-- A snapshot of a session.  samples, drops (ring full) and unwind_failures
-- are cumulative counts since the session began, like the buckets.
-- reason: 'attach', 'periodic', 'signal' (SIGUSR1), 'live' (the s key of
-- heapattach --live), 'peak', 'detach', 'exit' (target exited) or 'exec' (it
-- replaced its program); see the top of this file.
CREATE TABLE snapshots (
	id              INTEGER PRIMARY KEY,
	session_id      INTEGER NOT NULL REFERENCES sessions (id),
	time            REAL NOT NULL,
	rss_bytes       INTEGER NOT NULL,           -- VmRSS of the target (see rss_read_time)
	samples         INTEGER NOT NULL DEFAULT 0,
	drops           INTEGER NOT NULL DEFAULT 0,
	unwind_failures INTEGER NOT NULL DEFAULT 0,
	reason          TEXT NOT NULL DEFAULT ''
);
CREATE INDEX snapshots_session ON snapshots (session_id, id);

-- Cumulative values of (stack, kind) in a session, written at a snapshot
-- only when they changed since the previous snapshot of the session.
-- session_id repeats snapshots.session_id so that the latest row at or
-- before a snapshot is one index seek.  live = alloc - free.
CREATE TABLE buckets (
	session_id  INTEGER NOT NULL REFERENCES sessions (id),
	stack_id    INTEGER NOT NULL REFERENCES stacks (id),
	kind        INTEGER NOT NULL REFERENCES kinds (id),
	snapshot_id INTEGER NOT NULL REFERENCES snapshots (id),
	alloc_count REAL NOT NULL,
	alloc_bytes REAL NOT NULL,
	free_count  REAL NOT NULL,
	free_bytes  REAL NOT NULL,
	live_count  REAL NOT NULL,
	live_bytes  REAL NOT NULL,
	PRIMARY KEY (session_id, stack_id, kind, snapshot_id)
) WITHOUT ROWID;
CREATE INDEX buckets_snapshot ON buckets (snapshot_id);

-- Every (stack, kind) that has a bucket in a session, with the snapshot of
-- its first row: the keys of the session's buckets, kept by the writer in
-- the same transaction as the buckets.
CREATE TABLE session_stacks (
	session_id        INTEGER NOT NULL REFERENCES sessions (id),
	stack_id          INTEGER NOT NULL REFERENCES stacks (id),
	kind              INTEGER NOT NULL REFERENCES kinds (id),
	first_snapshot_id INTEGER NOT NULL REFERENCES snapshots (id),
	PRIMARY KEY (session_id, stack_id, kind)
) WITHOUT ROWID;

-- ======================================================================
-- Views.  Columns named kind in views hold the name ('heap', 'mmap').
-- Estimates are REAL: round them for display, e.g. printf('%.0f', x).
-- ======================================================================

-- bucket_at: the value of every bucket at every snapshot, i.e. the live
-- heap per stack at each snapshot (and the cumulative alloc/free totals).
-- written_at is the snapshot whose row holds the value.
--   Live heap at snapshot 7, largest first:
--     SELECT stack_id, kind, live_bytes, live_count FROM bucket_at
--      WHERE snapshot_id = 7 ORDER BY live_bytes DESC;
--   History of one stack:
--     SELECT snapshot_id, time, live_bytes FROM bucket_at
--      WHERE stack_id = 12 ORDER BY snapshot_id;
CREATE VIEW bucket_at AS
SELECT s.id AS snapshot_id, s.session_id, s.time, k.stack_id, kn.name AS kind,
       b.snapshot_id AS written_at,
       b.alloc_count, b.alloc_bytes, b.free_count, b.free_bytes,
       b.live_count, b.live_bytes
  FROM snapshots s
  JOIN session_stacks k ON k.session_id = s.session_id AND k.first_snapshot_id <= s.id
  JOIN buckets b ON b.session_id = s.session_id AND b.stack_id = k.stack_id
                AND b.kind = k.kind
                AND b.snapshot_id = (SELECT max(x.snapshot_id) FROM buckets x
                                      WHERE x.session_id = s.session_id
                                        AND x.stack_id = k.stack_id
                                        AND x.kind = k.kind
                                        AND x.snapshot_id <= s.id)
  JOIN kinds kn ON kn.id = k.kind;

-- growth: what changed per stack between any two snapshots; select the
-- pair with from_snapshot and to_snapshot (it may span two sessions: then
-- the values of each snapshot come from its own session).  The *_delta
-- columns are the value at to_snapshot minus the value at from_snapshot
-- (a bucket that does not exist yet counts as 0).
--   What grew from snapshot 1 to snapshot 7 (what heapdiff DB 1 7 shows):
--     SELECT stack_id, kind, live_bytes_delta, live_count_delta FROM growth
--      WHERE from_snapshot = 1 AND to_snapshot = 7 AND live_bytes_delta <> 0
--      ORDER BY live_bytes_delta DESC LIMIT 10;
CREATE VIEW growth AS
SELECT a.id AS from_snapshot, b.id AS to_snapshot, k.stack_id, kn.name AS kind,
       coalesce(vb.live_bytes, 0.0) - coalesce(va.live_bytes, 0.0) AS live_bytes_delta,
       coalesce(vb.live_count, 0.0) - coalesce(va.live_count, 0.0) AS live_count_delta,
       coalesce(vb.alloc_bytes, 0.0) - coalesce(va.alloc_bytes, 0.0) AS alloc_bytes_delta,
       coalesce(vb.alloc_count, 0.0) - coalesce(va.alloc_count, 0.0) AS alloc_count_delta,
       coalesce(vb.free_bytes, 0.0) - coalesce(va.free_bytes, 0.0) AS free_bytes_delta,
       coalesce(vb.free_count, 0.0) - coalesce(va.free_count, 0.0) AS free_count_delta,
       coalesce(va.live_bytes, 0.0) AS from_live_bytes,
       coalesce(vb.live_bytes, 0.0) AS to_live_bytes
  FROM snapshots a
  JOIN snapshots b
  -- keys: every bucket that exists at b ...
  JOIN session_stacks k ON k.session_id = b.session_id AND k.first_snapshot_id <= b.id
  JOIN kinds kn ON kn.id = k.kind
  LEFT JOIN buckets va ON va.session_id = a.session_id AND va.stack_id = k.stack_id
                      AND va.kind = k.kind
                      AND va.snapshot_id = (SELECT max(x.snapshot_id) FROM buckets x
                                             WHERE x.session_id = a.session_id
                                               AND x.stack_id = k.stack_id
                                               AND x.kind = k.kind
                                               AND x.snapshot_id <= a.id)
  JOIN buckets vb ON vb.session_id = b.session_id AND vb.stack_id = k.stack_id
                 AND vb.kind = k.kind
                 AND vb.snapshot_id = (SELECT max(x.snapshot_id) FROM buckets x
                                        WHERE x.session_id = b.session_id
                                          AND x.stack_id = k.stack_id
                                          AND x.kind = k.kind
                                          AND x.snapshot_id <= b.id)
UNION ALL
SELECT a.id, b.id, k.stack_id, kn.name,
       -va.live_bytes, -va.live_count, -va.alloc_bytes, -va.alloc_count,
       -va.free_bytes, -va.free_count, va.live_bytes, 0.0
  FROM snapshots a
  JOIN snapshots b
  -- ... and every bucket that exists at a but not at b (b earlier than a,
  -- or in another session)
  JOIN session_stacks k ON k.session_id = a.session_id AND k.first_snapshot_id <= a.id
  JOIN kinds kn ON kn.id = k.kind
  JOIN buckets va ON va.session_id = a.session_id AND va.stack_id = k.stack_id
                 AND va.kind = k.kind
                 AND va.snapshot_id = (SELECT max(x.snapshot_id) FROM buckets x
                                        WHERE x.session_id = a.session_id
                                          AND x.stack_id = k.stack_id
                                          AND x.kind = k.kind
                                          AND x.snapshot_id <= a.id)
 WHERE NOT EXISTS (SELECT 1 FROM session_stacks kb
                    WHERE kb.session_id = b.session_id AND kb.stack_id = k.stack_id
                      AND kb.kind = k.kind AND kb.first_snapshot_id <= b.id);

-- session_bounds: the first and last snapshot of every session.
--     SELECT * FROM session_bounds ORDER BY session_id DESC LIMIT 1;
CREATE VIEW session_bounds AS
SELECT s.id AS session_id, s.pid, s.comm,
       (SELECT min(id) FROM snapshots WHERE session_id = s.id) AS first_snapshot,
       (SELECT max(id) FROM snapshots WHERE session_id = s.id) AS last_snapshot,
       (SELECT count(*) FROM snapshots WHERE session_id = s.id) AS snapshots
  FROM sessions s;

-- frame_text: one frame as text, "function (file:line)"; an unknown
-- function shows as 0x<rel_pc> in <module>, an unknown file is left out.
--   Where a function was seen, with its module and offset (to re-symbolize):
--     SELECT text, module, printf('0x%x', rel_pc) FROM frame_text
--      WHERE function LIKE '%parse%';
CREATE VIEW frame_text AS
SELECT f.id AS frame_id, f.module_id, m.path AS module, f.rel_pc, f.function,
       f.file, f.line, f.inlined,
       CASE WHEN f.function <> '' THEN f.function
            ELSE printf('0x%x in %s', f.rel_pc,
                        CASE WHEN m.path <> '' THEN m.path ELSE '[unknown]' END)
       END
       || CASE WHEN f.file <> '' THEN ' (' || f.file
                 || CASE WHEN f.line > 0 THEN ':' || f.line ELSE '' END || ')'
               ELSE '' END AS text
  FROM frames f JOIN modules m ON m.id = f.module_id;

-- stack_text: a whole stack on one line, leaf first:
-- "leak (leak.c:12) <- handle (server.c:80) <- main (server.c:120)".
-- leaf_function is the function of frame 0 ('' if unknown).
--     SELECT text FROM stack_text WHERE stack_id = 12;
CREATE VIEW stack_text AS
SELECT st.id AS stack_id, st.depth,
       (SELECT f.function FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
         WHERE sf.stack_id = st.id AND sf.pos = 0) AS leaf_function,
       (WITH RECURSIVE r (pos, text) AS (
            SELECT 0, ft.text FROM stack_frames sf
              JOIN frame_text ft ON ft.frame_id = sf.frame_id
             WHERE sf.stack_id = st.id AND sf.pos = 0
            UNION ALL
            SELECT r.pos + 1, r.text || ' <- ' || ft.text FROM r
              JOIN stack_frames sf ON sf.stack_id = st.id AND sf.pos = r.pos + 1
              JOIN frame_text ft ON ft.frame_id = sf.frame_id)
        SELECT text FROM r ORDER BY pos DESC LIMIT 1) AS text
  FROM stacks st;

-- live_text / growth_text: bucket_at and growth with the stack as text.
--     SELECT live_bytes, live_count, stack FROM live_text
--      WHERE snapshot_id = 7 ORDER BY live_bytes DESC LIMIT 10;
--     SELECT live_bytes_delta, stack FROM growth_text
--      WHERE from_snapshot = 1 AND to_snapshot = 7
--      ORDER BY live_bytes_delta DESC LIMIT 10;
CREATE VIEW live_text AS
SELECT v.snapshot_id, v.stack_id, v.kind, v.live_bytes, v.live_count,
       v.alloc_bytes, v.alloc_count, t.text AS stack
  FROM bucket_at v JOIN stack_text t ON t.stack_id = v.stack_id;

CREATE VIEW growth_text AS
SELECT g.from_snapshot, g.to_snapshot, g.stack_id, g.kind, g.live_bytes_delta,
       g.live_count_delta, g.alloc_bytes_delta, g.alloc_count_delta, t.text AS stack
  FROM growth g JOIN stack_text t ON t.stack_id = g.stack_id;

-- top_sites: allocation sites (the leaf frame of the stacks, i.e. the code
-- that called the allocator; all stacks through it summed) at every snapshot.
--     SELECT site, live_bytes, alloc_bytes, stacks FROM top_sites
--      WHERE snapshot_id = 7 ORDER BY live_bytes DESC LIMIT 10;
CREATE VIEW top_sites AS
SELECT v.snapshot_id, sf.frame_id, ft.text AS site, ft.module, v.kind,
       total(v.live_bytes) AS live_bytes, total(v.live_count) AS live_count,
       total(v.alloc_bytes) AS alloc_bytes, total(v.alloc_count) AS alloc_count,
       total(v.free_bytes) AS free_bytes, total(v.free_count) AS free_count,
       count(*) AS stacks
  FROM bucket_at v
  JOIN stack_frames sf ON sf.stack_id = v.stack_id AND sf.pos = 0
  JOIN frame_text ft ON ft.frame_id = sf.frame_id
 GROUP BY v.snapshot_id, sf.frame_id, v.kind;

-- module_totals: live heap per module at every snapshot.  self_* counts
-- the stacks whose leaf frame is in the module (allocated by its code);
-- total_* counts every stack with a frame in the module (allocated by its
-- code or by code it called), each stack once.
--     SELECT module, self_live_bytes, total_live_bytes FROM module_totals
--      WHERE snapshot_id = 7 ORDER BY total_live_bytes DESC;
CREATE VIEW module_totals AS
SELECT v.snapshot_id, m.id AS module_id, m.path AS module, m.build_id, v.kind,
       total(CASE WHEN sm.leaf THEN v.live_bytes END) AS self_live_bytes,
       total(CASE WHEN sm.leaf THEN v.live_count END) AS self_live_count,
       total(v.live_bytes) AS total_live_bytes,
       total(v.live_count) AS total_live_count,
       total(CASE WHEN sm.leaf THEN v.alloc_bytes END) AS self_alloc_bytes,
       total(v.alloc_bytes) AS total_alloc_bytes
  FROM bucket_at v
  JOIN (SELECT sf.stack_id, f.module_id, max(sf.pos = 0) AS leaf
          FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
         GROUP BY sf.stack_id, f.module_id) sm ON sm.stack_id = v.stack_id
  JOIN modules m ON m.id = sm.module_id
 GROUP BY v.snapshot_id, m.id, v.kind;

-- Schema version 2 additions.

-- The views leak_trend and leak_suspects (defined since version 4 in the
-- version 4 additions, which every upgrade runs).

-- Schema version 3 additions.

-- The sampling interval of a snapshot's period: the largest mean interval
-- (bytes) in effect since the previous snapshot of the session.  It is the
-- session's sample_interval unless the attacher raised it because the ring
-- overflowed (it lowers it again once the ring keeps up); the buckets are
-- unbiased sample by sample, with the interval each sample was taken at.
-- 0 in snapshots written before version 3.
--     SELECT id, time, sample_interval FROM snapshots
--      WHERE session_id = 1 AND sample_interval >
--            (SELECT sample_interval FROM sessions WHERE id = 1);
ALTER TABLE snapshots ADD COLUMN sample_interval INTEGER NOT NULL DEFAULT 0;

-- Schema version 4 additions.

-- The snapshots with reason 'attach' (the baseline) and 'peak' (see the top
-- of this file).  A trend is measured over the snapshots in time order: the
-- peak snapshot, written out of that order, is left out of leak_trend (and
-- so of leak_suspects), which are otherwise as in version 2.
DROP VIEW IF EXISTS leak_suspects;
DROP VIEW IF EXISTS leak_trend;

-- leak_trend: for every (callstack, kind) of a session, the trend of its
-- live bytes over ALL snapshots of the session but the peak (0 before its
-- first row):
-- bytes_per_minute is the least-squares slope against time; fit the R^2 of
-- that line (1 = a straight line); steady the share of its changes that
-- were increases (1 = it never fell); retained its last value over its
-- highest (1 = it did not fall back); trend_bytes the fitted growth over
-- the session (bytes_per_minute times the session's duration).
--   The trend of stack 12 in session 1:
--     SELECT bytes_per_minute, fit, steady, retained FROM leak_trend
--      WHERE session_id = 1 AND stack_id = 12;
CREATE VIEW leak_trend AS
WITH series AS (
	SELECT k.session_id, k.stack_id, k.kind, s.id AS snapshot_id,
	       s.time - (SELECT s0.time FROM snapshots s0 WHERE s0.session_id = s.session_id
	                  ORDER BY s0.id LIMIT 1) AS t,
	       coalesce((SELECT b.live_bytes FROM buckets b
	                  WHERE b.session_id = k.session_id AND b.stack_id = k.stack_id
	                    AND b.kind = k.kind AND b.snapshot_id <= s.id
	                  ORDER BY b.snapshot_id DESC LIMIT 1), 0.0) AS y,
	       coalesce((SELECT b.live_count FROM buckets b
	                  WHERE b.session_id = k.session_id AND b.stack_id = k.stack_id
	                    AND b.kind = k.kind AND b.snapshot_id <= s.id
	                  ORDER BY b.snapshot_id DESC LIMIT 1), 0.0) AS c
	  FROM session_stacks k JOIN snapshots s ON s.session_id = k.session_id
	 WHERE s.reason <> 'peak'),
steps AS (
	SELECT series.*,
	       y - lag(y) OVER (PARTITION BY session_id, stack_id, kind ORDER BY snapshot_id) AS dy,
	       row_number() OVER (PARTITION BY session_id, stack_id, kind
	                          ORDER BY snapshot_id DESC) AS from_end
	  FROM series),
means AS (
	SELECT session_id, stack_id, kind, count(*) AS n, avg(t) AS mt, avg(y) AS my,
	       max(y) AS ymax, max(t) - min(t) AS duration,
	       total(max(dy, 0.0)) AS up, total(abs(dy)) AS moved,
	       max(CASE WHEN dy IS NULL THEN y END) AS first_bytes,
	       max(CASE WHEN from_end = 1 THEN y END) AS last_bytes,
	       max(CASE WHEN from_end = 1 THEN c END) AS last_count
	  FROM steps GROUP BY session_id, stack_id, kind),
fit AS (
	SELECT m.*, total((s.t - m.mt) * (s.t - m.mt)) AS sxx,
	       total((s.t - m.mt) * (s.y - m.my)) AS sxy, total((s.y - m.my) * (s.y - m.my)) AS syy
	  FROM means m JOIN steps s ON s.session_id = m.session_id AND s.stack_id = m.stack_id
	                           AND s.kind = m.kind
	 GROUP BY m.session_id, m.stack_id, m.kind)
SELECT f.session_id, f.stack_id, kn.name AS kind, f.n AS snapshots,
       CASE WHEN f.sxx > 0 THEN f.sxy / f.sxx * 60 ELSE 0.0 END AS bytes_per_minute,
       CASE WHEN f.sxx > 0 THEN f.sxy / f.sxx * f.duration ELSE 0.0 END AS trend_bytes,
       CASE WHEN f.sxx > 0 AND f.syy > 0 THEN f.sxy * f.sxy / (f.sxx * f.syy) ELSE 0.0 END AS fit,
       CASE WHEN f.moved > 0 THEN f.up / f.moved ELSE 0.0 END AS steady,
       CASE WHEN f.ymax > 0 THEN f.last_bytes / f.ymax ELSE 0.0 END AS retained,
       f.first_bytes, f.last_bytes, f.ymax AS max_bytes, f.last_count AS live_count
  FROM fit f JOIN kinds kn ON kn.id = f.kind;

-- leak_suspects: the rows of leak_trend that grow steadily, with the stack
-- as text: at least 3 snapshots, a positive slope, fit >= 0.8, steady >=
-- 0.9, retained >= 0.9 (a cache that grew and was emptied again is not a
-- leak) and at least one byte of fitted growth.  What heapdiff --leaks
-- lists (without its --min-bytes, filters and frame folding).
--   Leak suspects of session 1, fastest first:
--     SELECT printf('%.0f', bytes_per_minute) AS per_min, stack FROM leak_suspects
--      WHERE session_id = 1 ORDER BY bytes_per_minute DESC;
CREATE VIEW leak_suspects AS
SELECT t.session_id, t.stack_id, t.kind, t.snapshots, t.bytes_per_minute, t.trend_bytes,
       t.fit, t.steady, t.retained, t.first_bytes, t.last_bytes, t.max_bytes, t.live_count,
       st.text AS stack
  FROM leak_trend t JOIN stack_text st ON st.stack_id = t.stack_id
 WHERE t.snapshots >= 3 AND t.bytes_per_minute > 0 AND t.fit >= 0.8 AND t.steady >= 0.9
   AND t.retained >= 0.9 AND t.trend_bytes >= 1;

-- Schema version 5 additions.

-- Resident memory by first-touch call path (heapattach --rss).  The
-- attacher samples the target's minor page faults (every Nth fault of each
-- thread, N = sessions.rss_period) and attributes the page each sampled
-- fault made resident to the call path that touched it first; a sampled
-- fault stands for N faults, so it weighs N times the size of what its
-- fault mapped (4 KiB, or 2 MiB for a transparent huge page).  At every
-- snapshot it reads the residency of the attributed pages (pagemap):
--   kind 'rss'  private anonymous pages still resident (what RssAnon
--               counts): live_bytes is what the call path holds resident
--               now, alloc_bytes what it made resident in the session,
--               free_bytes what left RSS (MADV_DONTNEED, munmap, an exited
--               thread's stack, swapped out); counts are 4 KiB pages;
--   kind 'swap' the same call paths' pages that are swapped out now
--               (alloc: pages that went out, free: pages back in or gone).
-- File-backed pages (page cache, shared with other processes) and the
-- shared zero page are left out.  Neither kind is part of the live heap:
-- heap and mmap are what the program allocated, rss and swap where that
-- memory physically is; never add them up.
INSERT OR IGNORE INTO kinds (id, name) VALUES (2, 'rss'), (3, 'swap');

-- The page-fault sampling period of the session (faults per sample); 0:
-- no --rss.
ALTER TABLE sessions ADD COLUMN rss_period INTEGER NOT NULL DEFAULT 0;
-- The kernel's view at each snapshot (/proc/PID/status RssAnon and
-- VmSwap, bytes; 0 when unknown), and the page-fault samples booked and
-- lost by the kernel (its ring full), cumulative like samples and drops.
ALTER TABLE snapshots ADD COLUMN rss_anon_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN swap_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN rss_samples INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN rss_lost INTEGER NOT NULL DEFAULT 0;

-- snapshot_totals: per snapshot, the estimated live heap (heap and mmap,
-- all stacks) and the attributed resident and swapped memory (kinds rss
-- and swap) next to the kernel's RSS, RssAnon and swap, and the counters.
--     SELECT snapshot_id, time, live_bytes, resident_bytes, rss_anon_bytes
--       FROM snapshot_totals WHERE session_id = 1 ORDER BY time;
DROP VIEW IF EXISTS snapshot_totals;
CREATE VIEW snapshot_totals AS
SELECT s.id AS snapshot_id, s.session_id, s.time, s.reason, s.rss_bytes,
       (SELECT total(v.live_bytes) FROM bucket_at v
         WHERE v.snapshot_id = s.id AND v.kind IN ('heap', 'mmap')) AS live_bytes,
       (SELECT total(v.live_count) FROM bucket_at v
         WHERE v.snapshot_id = s.id AND v.kind IN ('heap', 'mmap')) AS live_count,
       s.samples, s.drops, s.unwind_failures,
       (SELECT total(v.live_bytes) FROM bucket_at v
         WHERE v.snapshot_id = s.id AND v.kind = 'rss') AS resident_bytes,
       (SELECT total(v.live_bytes) FROM bucket_at v
         WHERE v.snapshot_id = s.id AND v.kind = 'swap') AS swapped_bytes,
       s.rss_anon_bytes, s.swap_bytes, s.rss_samples, s.rss_lost
  FROM snapshots s;

-- Schema version 6 additions.

-- The name of the host the session was recorded on (gethostname(2) of the
-- attacher; '' in sessions written before version 6): heapdiff --push
-- labels the profiles of a database copied from that host with it.
ALTER TABLE sessions ADD COLUMN hostname TEXT NOT NULL DEFAULT '';

-- Schema version 7 additions.

-- Frames unwound in the session so far (every sample's callstack, pcs
-- before inlining), and how many of them were found by following the frame
-- pointer through code without unwind tables (JIT code, node's builtins,
-- assembly without CFI; see doc/design.md), cumulative like samples.  0 in
-- snapshots written before version 7.
--     SELECT id, fp_frames * 1.0 / frames FROM snapshots WHERE frames > 0;
ALTER TABLE snapshots ADD COLUMN frames INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN fp_frames INTEGER NOT NULL DEFAULT 0;

-- Schema version 8 additions.

-- What heapattach found of the target's CPython ('' when none, and in
-- sessions written before version 8): its version and module, then at the
-- end of the session what became of its frames and of the wrap of its
-- small-object allocator, e.g. "Python 3.11 (/usr/bin/python3.11): 1200
-- samples with Python frames, 0 left native; frames and small objects on".
ALTER TABLE sessions ADD COLUMN python TEXT NOT NULL DEFAULT '';

-- Schema version 9 additions.

-- When the figures of the kernel's view in a snapshot (rss_bytes,
-- rss_anon_bytes, swap_bytes) were read.  NULL: at the snapshot (every
-- snapshot of a live target, and every one written before version 9).
-- A time: the target could not be read at the snapshot, because it had
-- exited or was exiting (the 'exit' snapshot, and any taken in its last
-- moment): the figures are the last ones read before the exit, at this
-- unix time (heapattach reads them at least every 0.1 s); a gone target's
-- RSS is unknown, never 0.  rss_bytes 0 means unknown: nothing was read
-- (and before version 9, the 'exit' snapshot recorded 0 for a target
-- already gone).
--     SELECT id, reason, rss_bytes, time - rss_read_time AS seconds_before
--       FROM snapshots WHERE rss_read_time IS NOT NULL;
ALTER TABLE snapshots ADD COLUMN rss_read_time REAL;

-- snapshot_totals as in version 5, with rss_read_time.
DROP VIEW IF EXISTS snapshot_totals;
CREATE VIEW snapshot_totals AS
SELECT s.id AS snapshot_id, s.session_id, s.time, s.reason, s.rss_bytes,
       (SELECT total(v.live_bytes) FROM bucket_at v
         WHERE v.snapshot_id = s.id AND v.kind IN ('heap', 'mmap')) AS live_bytes,
       (SELECT total(v.live_count) FROM bucket_at v
         WHERE v.snapshot_id = s.id AND v.kind IN ('heap', 'mmap')) AS live_count,
       s.samples, s.drops, s.unwind_failures,
       (SELECT total(v.live_bytes) FROM bucket_at v
         WHERE v.snapshot_id = s.id AND v.kind = 'rss') AS resident_bytes,
       (SELECT total(v.live_bytes) FROM bucket_at v
         WHERE v.snapshot_id = s.id AND v.kind = 'swap') AS swapped_bytes,
       s.rss_anon_bytes, s.swap_bytes, s.rss_samples, s.rss_lost, s.rss_read_time
  FROM snapshots s;

-- Schema version 10 additions.

-- Where the target's RssAnon goes (issue 41), read by the attacher at each
-- snapshot: RssAnon from /proc/PID/smaps_rollup (memory_rss_anon_bytes,
-- NULL when not read: snapshots written before version 10, or a target
-- gone) and the allocator read (memory_allocator: 'glibc' when its arenas
-- were walked, else 'unknown (why)'; NULL when not read).
ALTER TABLE snapshots ADD COLUMN memory_rss_anon_bytes INTEGER;
ALTER TABLE snapshots ADD COLUMN memory_allocator TEXT;

-- RssAnon in terms that add up to it, one row per term and snapshot read
-- (src/common/mem_terms.c names them):
--   live_heap_sampled        blocks in use in the allocator's heaps, sampled
--                            since attach (the estimate, up to what is resident)
--   live_heap_before_attach  the other blocks in use there, resident
--   allocator_free_trimmable free and resident whole pages, and the main
--                            arena's top: what malloc_trim(0) gives back
--   allocator_free_pinned    free bytes on resident pages that also hold
--                            blocks in use
--   allocator_overhead       chunk headers, arena structures, thread arenas' tops
--   mmap_chunks              blocks malloc took with mmap, resident
--   thread_stacks            [stack] and the threads' stacks
--   profiler                 heapattach's agent (its rings are shared memory)
--   other_anon               every other anonymous page
--   unexplained              RssAnon minus the others (may be negative)
--     SELECT term, bytes FROM memory_terms WHERE snapshot_id = 3;
CREATE TABLE memory_terms (
	snapshot_id INTEGER NOT NULL REFERENCES snapshots (id),
	term        TEXT NOT NULL,
	bytes       INTEGER NOT NULL,
	PRIMARY KEY (snapshot_id, term)
) WITHOUT ROWID;

-- glibc's arenas at that snapshot, the main arena as arena 0: its
-- malloc_state address (0: not found), heaps, bytes of the heaps (system),
-- in chunks in use, free in bins, the top, resident, trimmable and pinned
-- as above; complete 0 when the walk stopped early (it races the target).
CREATE TABLE memory_arenas (
	snapshot_id     INTEGER NOT NULL REFERENCES snapshots (id),
	arena           INTEGER NOT NULL,
	is_main         INTEGER NOT NULL,
	address         INTEGER NOT NULL,
	heaps           INTEGER NOT NULL,
	system_bytes    INTEGER NOT NULL,
	in_use_bytes    INTEGER NOT NULL,
	free_bytes      INTEGER NOT NULL,
	top_bytes       INTEGER NOT NULL,
	resident_bytes  INTEGER NOT NULL,
	trimmable_bytes INTEGER NOT NULL,
	pinned_bytes    INTEGER NOT NULL,
	complete        INTEGER NOT NULL,
	PRIMARY KEY (snapshot_id, arena)
) WITHOUT ROWID;

-- Schema version 11 additions.

-- Reachability scans (heapattach --reach): one row per snapshot that has
-- one.  The target's threads were stopped at a safe point and copied by a
-- raw clone; the copy was read, its heap marked from its roots, and each
-- sampled live block found reachable or not.  pause_ms: how long the
-- target's threads were stopped; duration_ms: the whole scan; bytes_scanned:
-- roots and heap blocks read; cow_bytes: what the copy cost the machine at
-- its end (its own pages, copied when the target wrote them, and its page
-- tables); chunks: the allocator's blocks in use found; blocks: the
-- sampled blocks classified.  error: '' for a scan that ran, else why none
-- did (then the other figures are 0 and the snapshot has no reach rows).
CREATE TABLE reach_scans (
	snapshot_id   INTEGER PRIMARY KEY REFERENCES snapshots (id),
	pause_ms      REAL NOT NULL,
	duration_ms   REAL NOT NULL,
	bytes_scanned INTEGER NOT NULL,
	cow_bytes     INTEGER NOT NULL,
	chunks        INTEGER NOT NULL,
	blocks        INTEGER NOT NULL,
	error         TEXT NOT NULL DEFAULT ''
);

-- Per callstack and kind at a scan: the live estimate split into what no
-- root reaches any more (unreachable: leaked; a block reachable only from
-- unreachable blocks is unreachable too), what a root reaches, and what the
-- scan could not tell (a block that was no chunk of the allocator's when
-- the copy was made: freed meanwhile).  Estimates like live_bytes.
CREATE TABLE reach_rows (
	snapshot_id       INTEGER NOT NULL REFERENCES snapshots (id),
	stack_id          INTEGER NOT NULL REFERENCES stacks (id),
	kind              INTEGER NOT NULL REFERENCES kinds (id),
	unreachable_bytes REAL NOT NULL,
	unreachable_count REAL NOT NULL,
	reachable_bytes   REAL NOT NULL,
	reachable_count   REAL NOT NULL,
	unknown_bytes     REAL NOT NULL,
	unknown_count     REAL NOT NULL,
	PRIMARY KEY (snapshot_id, stack_id, kind)
) WITHOUT ROWID;

-- Who holds the reachable blocks of a callstack: the root through which
-- each was first reached.  root: 'global' (name: the symbol and its
-- module, "g_cache [prog]", or module+offset), 'tls' and 'stack' (name:
-- "tid N"), 'register' ("tid N rbx"), 'anon' (another anonymous mapping:
-- "mapping 0x7f..."); hops: the fewest heap blocks between the root and a
-- block it holds (0: the root points at the block).
CREATE TABLE reach_holders (
	snapshot_id INTEGER NOT NULL REFERENCES snapshots (id),
	stack_id    INTEGER NOT NULL REFERENCES stacks (id),
	kind        INTEGER NOT NULL REFERENCES kinds (id),
	root        TEXT NOT NULL,
	name        TEXT NOT NULL,
	bytes       REAL NOT NULL,
	count       REAL NOT NULL,
	hops        INTEGER NOT NULL,
	PRIMARY KEY (snapshot_id, stack_id, kind, root, name)
) WITHOUT ROWID;

-- Schema version 12 additions.

-- The buckets laid out by snapshot, with keyframes (man heapattach-db(5),
-- "Storage").  Before version 12 the buckets table was keyed (session,
-- stack, kind, snapshot): one snapshot's rows landed one in each stack's
-- range, all over the tree, and every snapshot rewrote most of its pages
-- (bench/soak: the attacher wrote ~300 times the file's final size).  Now
-- it is keyed (session, snapshot, stack, kind): a snapshot's rows are
-- appended together.  Rows are still written only when they changed, and
-- a snapshot now and then is a keyframe that holds a row for every bucket
-- of the session at it, so that
--
--     the value of a bucket at snapshot S is its latest row in the
--     snapshots snapshots.base_id .. S of the session of S, by id (it does
--     not exist at S if none of them has a row for it).
--
-- base_id is the keyframe S is read from (S itself when S is one).  The
-- writer makes a snapshot a keyframe when its rows hold every bucket of
-- the session, or when the rows written since the keyframe would reach
-- twice the session's buckets (it then copies the missing ones in), so
-- that reading any snapshot reads at most about three times the session's
-- buckets.  A session's first snapshot is a keyframe.  Thinning keeps this
-- true: a removed keyframe's rows go to the next snapshot, which becomes
-- the keyframe of those that were read from it.  Files upgraded from an
-- older version read every snapshot from its session's first one.
ALTER TABLE snapshots ADD COLUMN base_id INTEGER REFERENCES snapshots (id);
UPDATE snapshots SET base_id = (SELECT min(x.id) FROM snapshots x
                                 WHERE x.session_id = snapshots.session_id);

CREATE TEMP TABLE buckets_v11 AS SELECT session_id, stack_id, kind, snapshot_id, alloc_count,
       alloc_bytes, free_count, free_bytes, live_count, live_bytes FROM buckets;
DROP TABLE buckets;
CREATE TABLE buckets (
	session_id  INTEGER NOT NULL REFERENCES sessions (id),
	snapshot_id INTEGER NOT NULL REFERENCES snapshots (id),
	stack_id    INTEGER NOT NULL REFERENCES stacks (id),
	kind        INTEGER NOT NULL REFERENCES kinds (id),
	alloc_count REAL NOT NULL,
	alloc_bytes REAL NOT NULL,
	free_count  REAL NOT NULL,
	free_bytes  REAL NOT NULL,
	live_count  REAL NOT NULL,
	live_bytes  REAL NOT NULL,
	PRIMARY KEY (session_id, snapshot_id, stack_id, kind)
) WITHOUT ROWID;
INSERT INTO buckets (session_id, snapshot_id, stack_id, kind, alloc_count, alloc_bytes,
                     free_count, free_bytes, live_count, live_bytes)
SELECT session_id, snapshot_id, stack_id, kind, alloc_count, alloc_bytes, free_count,
       free_bytes, live_count, live_bytes FROM buckets_v11 ORDER BY session_id, snapshot_id,
       stack_id, kind;
DROP TABLE temp.buckets_v11;

-- bucket_at as before, read from the keyframe on (max() picks the row of
-- the latest snapshot for the other columns: SQLite's rule for a bare
-- column beside a single max()).
DROP VIEW IF EXISTS bucket_at;
CREATE VIEW bucket_at AS
SELECT s.id AS snapshot_id, s.session_id, s.time, b.stack_id, kn.name AS kind,
       max(b.snapshot_id) AS written_at,
       b.alloc_count, b.alloc_bytes, b.free_count, b.free_bytes,
       b.live_count, b.live_bytes
  FROM snapshots s
  JOIN buckets b ON b.session_id = s.session_id
                AND b.snapshot_id BETWEEN s.base_id AND s.id
  JOIN kinds kn ON kn.id = b.kind
 GROUP BY s.id, b.stack_id, b.kind;

-- growth as before: the buckets of the two snapshots side by side (a
-- bucket missing at one counts as 0 there).
DROP VIEW IF EXISTS growth;
CREATE VIEW growth AS
SELECT a.id AS from_snapshot, b.id AS to_snapshot, k.stack_id, k.kind,
       coalesce(vb.live_bytes, 0.0) - coalesce(va.live_bytes, 0.0) AS live_bytes_delta,
       coalesce(vb.live_count, 0.0) - coalesce(va.live_count, 0.0) AS live_count_delta,
       coalesce(vb.alloc_bytes, 0.0) - coalesce(va.alloc_bytes, 0.0) AS alloc_bytes_delta,
       coalesce(vb.alloc_count, 0.0) - coalesce(va.alloc_count, 0.0) AS alloc_count_delta,
       coalesce(vb.free_bytes, 0.0) - coalesce(va.free_bytes, 0.0) AS free_bytes_delta,
       coalesce(vb.free_count, 0.0) - coalesce(va.free_count, 0.0) AS free_count_delta,
       coalesce(va.live_bytes, 0.0) AS from_live_bytes,
       coalesce(vb.live_bytes, 0.0) AS to_live_bytes
  FROM snapshots a
  JOIN snapshots b
  JOIN (SELECT snapshot_id, stack_id, kind FROM bucket_at) k
    ON k.snapshot_id = a.id OR k.snapshot_id = b.id
  LEFT JOIN bucket_at va ON va.snapshot_id = a.id AND va.stack_id = k.stack_id
                        AND va.kind = k.kind
  LEFT JOIN bucket_at vb ON vb.snapshot_id = b.id AND vb.stack_id = k.stack_id
                        AND vb.kind = k.kind
 WHERE k.snapshot_id = b.id OR vb.stack_id IS NULL;

-- leak_trend as in version 4, each snapshot's value carried on from the
-- row at or before it (grp: the rows so far of the bucket).
DROP VIEW IF EXISTS leak_suspects;
DROP VIEW IF EXISTS leak_trend;
CREATE VIEW leak_trend AS
WITH cells AS (
	SELECT k.session_id, k.stack_id, k.kind, s.id AS snapshot_id,
	       s.time - (SELECT s0.time FROM snapshots s0 WHERE s0.session_id = s.session_id
	                  ORDER BY s0.id LIMIT 1) AS t,
	       b.live_bytes AS row_bytes, b.live_count AS row_count
	  FROM session_stacks k JOIN snapshots s ON s.session_id = k.session_id
	  LEFT JOIN buckets b ON b.session_id = k.session_id AND b.snapshot_id = s.id
	                     AND b.stack_id = k.stack_id AND b.kind = k.kind
	 WHERE s.reason <> 'peak' OR b.snapshot_id IS NOT NULL),
grouped AS (
	SELECT cells.*, count(row_bytes) OVER (PARTITION BY session_id, stack_id, kind
	                                       ORDER BY snapshot_id) AS grp
	  FROM cells),
filled AS (
	SELECT session_id, stack_id, kind, snapshot_id, t,
	       coalesce(max(row_bytes) OVER (PARTITION BY session_id, stack_id, kind, grp), 0.0) AS y,
	       coalesce(max(row_count) OVER (PARTITION BY session_id, stack_id, kind, grp), 0.0) AS c
	  FROM grouped),
series AS (
	SELECT f.* FROM filled f JOIN snapshots s ON s.id = f.snapshot_id WHERE s.reason <> 'peak'),
steps AS (
	SELECT series.*,
	       y - lag(y) OVER (PARTITION BY session_id, stack_id, kind ORDER BY snapshot_id) AS dy,
	       row_number() OVER (PARTITION BY session_id, stack_id, kind
	                          ORDER BY snapshot_id DESC) AS from_end
	  FROM series),
means AS (
	SELECT session_id, stack_id, kind, count(*) AS n, avg(t) AS mt, avg(y) AS my,
	       max(y) AS ymax, max(t) - min(t) AS duration,
	       total(max(dy, 0.0)) AS up, total(abs(dy)) AS moved,
	       max(CASE WHEN dy IS NULL THEN y END) AS first_bytes,
	       max(CASE WHEN from_end = 1 THEN y END) AS last_bytes,
	       max(CASE WHEN from_end = 1 THEN c END) AS last_count
	  FROM steps GROUP BY session_id, stack_id, kind),
fit AS (
	SELECT m.*, total((s.t - m.mt) * (s.t - m.mt)) AS sxx,
	       total((s.t - m.mt) * (s.y - m.my)) AS sxy, total((s.y - m.my) * (s.y - m.my)) AS syy
	  FROM means m JOIN steps s ON s.session_id = m.session_id AND s.stack_id = m.stack_id
	                           AND s.kind = m.kind
	 GROUP BY m.session_id, m.stack_id, m.kind)
SELECT f.session_id, f.stack_id, kn.name AS kind, f.n AS snapshots,
       CASE WHEN f.sxx > 0 THEN f.sxy / f.sxx * 60 ELSE 0.0 END AS bytes_per_minute,
       CASE WHEN f.sxx > 0 THEN f.sxy / f.sxx * f.duration ELSE 0.0 END AS trend_bytes,
       CASE WHEN f.sxx > 0 AND f.syy > 0 THEN f.sxy * f.sxy / (f.sxx * f.syy) ELSE 0.0 END AS fit,
       CASE WHEN f.moved > 0 THEN f.up / f.moved ELSE 0.0 END AS steady,
       CASE WHEN f.ymax > 0 THEN f.last_bytes / f.ymax ELSE 0.0 END AS retained,
       f.first_bytes, f.last_bytes, f.ymax AS max_bytes, f.last_count AS live_count
  FROM fit f JOIN kinds kn ON kn.id = f.kind;

CREATE VIEW leak_suspects AS
SELECT t.session_id, t.stack_id, t.kind, t.snapshots, t.bytes_per_minute, t.trend_bytes,
       t.fit, t.steady, t.retained, t.first_bytes, t.last_bytes, t.max_bytes, t.live_count,
       st.text AS stack
  FROM leak_trend t JOIN stack_text st ON st.stack_id = t.stack_id
 WHERE t.snapshots >= 3 AND t.bytes_per_minute > 0 AND t.fit >= 0.8 AND t.steady >= 0.9
   AND t.retained >= 0.9 AND t.trend_bytes >= 1;

-- Schema version 13 additions.

-- The CPUs the target may use, read with the memory breakdown, for the
-- MALLOC_ARENA_MAX hint of heapdiff --memory (glibc makes up to 8 arenas
-- per online CPU of the host, not of the affinity or the cgroup's quota):
-- the host's online CPUs, the
-- CPUs of the target's affinity, its cgroup's CPU quota in CPUs (the lowest
-- on its path: cpu.max, or v1's cfs_quota_us / cfs_period_us); NULL when
-- unknown or, for the quota, when there is none.
ALTER TABLE snapshots ADD COLUMN memory_cpus_online INTEGER;
ALTER TABLE snapshots ADD COLUMN memory_cpus_allowed INTEGER;
ALTER TABLE snapshots ADD COLUMN memory_cpu_quota REAL;

-- Which call paths pin the holes (heapdiff --memory --by-stack), at a
-- snapshot with a memory breakdown: the free bytes of each resident page
-- that also holds blocks in use (allocator_free_pinned) charged to the
-- sampled live heap blocks on the page, each in proportion to its bytes
-- there (tcmalloc's span accounting), times its sample weight, summed per
-- callstack; blocks: the blocks charged (an estimate, as live_count).
-- allocator_free_pinned minus the sum of pinned_bytes is what no sampled
-- block was charged: blocks from before attach, pages holding only the
-- header of a free chunk, the estimate's error.
CREATE TABLE memory_pinning (
	snapshot_id  INTEGER NOT NULL REFERENCES snapshots (id),
	stack_id     INTEGER NOT NULL REFERENCES stacks (id),
	pinned_bytes REAL NOT NULL,
	blocks       REAL NOT NULL,
	PRIMARY KEY (snapshot_id, stack_id)
) WITHOUT ROWID;

-- Schema version 14 additions.

-- Call paths every two minutes, totals every snapshot (man
-- heapattach-db(5), "Cadence").  A day of snapshots every 10 s wrote each
-- call path's row 8,640 times to keep some 800 of them: the attacher wrote
-- 38 times the file's final size to disk.  Since version 14 a periodic
-- snapshot carries its call paths' rows only when --snapshot-every x 12
-- (two minutes at the default 10 s) has passed since the last one that
-- did, or in the first twelve periods of the session; every other one
-- holds the session's
-- totals only.  paths: 1 when the snapshot has its call paths (the rows of
-- the buckets changed since the previous snapshot with paths), 0 when it
-- has totals only: no bucket rows, base_id NULL, no memory breakdown; its
-- values per call path are unknown (bucket_at has no rows for it, growth
-- and leak_trend leave it out).  The baseline, those asked for (SIGUSR1,
-- s in --live), those with a reachability scan, the peak and the last
-- always have paths.  Snapshots written before version 14 all have paths.
--     SELECT id, time, paths FROM snapshots WHERE session_id = 1 ORDER BY id;
ALTER TABLE snapshots ADD COLUMN paths INTEGER NOT NULL DEFAULT 1;

-- The session's estimated live totals at every snapshot written since
-- version 14, with paths or without: the sum over every call path of
-- live_bytes of each kind, and of live_count of heap and mmap (NULL in
-- older snapshots: sum bucket_at, as snapshot_totals does).
ALTER TABLE snapshots ADD COLUMN live_heap_bytes REAL;
ALTER TABLE snapshots ADD COLUMN live_mmap_bytes REAL;
ALTER TABLE snapshots ADD COLUMN live_rss_bytes REAL;
ALTER TABLE snapshots ADD COLUMN live_swap_bytes REAL;
ALTER TABLE snapshots ADD COLUMN live_count REAL;

-- growth as in version 12, between two snapshots with call paths only.
DROP VIEW IF EXISTS growth;
CREATE VIEW growth AS
SELECT a.id AS from_snapshot, b.id AS to_snapshot, k.stack_id, k.kind,
       coalesce(vb.live_bytes, 0.0) - coalesce(va.live_bytes, 0.0) AS live_bytes_delta,
       coalesce(vb.live_count, 0.0) - coalesce(va.live_count, 0.0) AS live_count_delta,
       coalesce(vb.alloc_bytes, 0.0) - coalesce(va.alloc_bytes, 0.0) AS alloc_bytes_delta,
       coalesce(vb.alloc_count, 0.0) - coalesce(va.alloc_count, 0.0) AS alloc_count_delta,
       coalesce(vb.free_bytes, 0.0) - coalesce(va.free_bytes, 0.0) AS free_bytes_delta,
       coalesce(vb.free_count, 0.0) - coalesce(va.free_count, 0.0) AS free_count_delta,
       coalesce(va.live_bytes, 0.0) AS from_live_bytes,
       coalesce(vb.live_bytes, 0.0) AS to_live_bytes
  FROM snapshots a
  JOIN snapshots b
  JOIN (SELECT snapshot_id, stack_id, kind FROM bucket_at) k
    ON k.snapshot_id = a.id OR k.snapshot_id = b.id
  LEFT JOIN bucket_at va ON va.snapshot_id = a.id AND va.stack_id = k.stack_id
                        AND va.kind = k.kind
  LEFT JOIN bucket_at vb ON vb.snapshot_id = b.id AND vb.stack_id = k.stack_id
                        AND vb.kind = k.kind
 WHERE (k.snapshot_id = b.id OR vb.stack_id IS NULL) AND a.paths = 1 AND b.paths = 1;

-- leak_trend as in version 12, over the snapshots with call paths only.
DROP VIEW IF EXISTS leak_suspects;
DROP VIEW IF EXISTS leak_trend;
CREATE VIEW leak_trend AS
WITH cells AS (
	SELECT k.session_id, k.stack_id, k.kind, s.id AS snapshot_id,
	       s.time - (SELECT s0.time FROM snapshots s0 WHERE s0.session_id = s.session_id
	                  ORDER BY s0.id LIMIT 1) AS t,
	       b.live_bytes AS row_bytes, b.live_count AS row_count
	  FROM session_stacks k JOIN snapshots s ON s.session_id = k.session_id AND s.paths = 1
	  LEFT JOIN buckets b ON b.session_id = k.session_id AND b.snapshot_id = s.id
	                     AND b.stack_id = k.stack_id AND b.kind = k.kind
	 WHERE s.reason <> 'peak' OR b.snapshot_id IS NOT NULL),
grouped AS (
	SELECT cells.*, count(row_bytes) OVER (PARTITION BY session_id, stack_id, kind
	                                       ORDER BY snapshot_id) AS grp
	  FROM cells),
filled AS (
	SELECT session_id, stack_id, kind, snapshot_id, t,
	       coalesce(max(row_bytes) OVER (PARTITION BY session_id, stack_id, kind, grp), 0.0) AS y,
	       coalesce(max(row_count) OVER (PARTITION BY session_id, stack_id, kind, grp), 0.0) AS c
	  FROM grouped),
series AS (
	SELECT f.* FROM filled f JOIN snapshots s ON s.id = f.snapshot_id WHERE s.reason <> 'peak'),
steps AS (
	SELECT series.*,
	       y - lag(y) OVER (PARTITION BY session_id, stack_id, kind ORDER BY snapshot_id) AS dy,
	       row_number() OVER (PARTITION BY session_id, stack_id, kind
	                          ORDER BY snapshot_id DESC) AS from_end
	  FROM series),
means AS (
	SELECT session_id, stack_id, kind, count(*) AS n, avg(t) AS mt, avg(y) AS my,
	       max(y) AS ymax, max(t) - min(t) AS duration,
	       total(max(dy, 0.0)) AS up, total(abs(dy)) AS moved,
	       max(CASE WHEN dy IS NULL THEN y END) AS first_bytes,
	       max(CASE WHEN from_end = 1 THEN y END) AS last_bytes,
	       max(CASE WHEN from_end = 1 THEN c END) AS last_count
	  FROM steps GROUP BY session_id, stack_id, kind),
fit AS (
	SELECT m.*, total((s.t - m.mt) * (s.t - m.mt)) AS sxx,
	       total((s.t - m.mt) * (s.y - m.my)) AS sxy, total((s.y - m.my) * (s.y - m.my)) AS syy
	  FROM means m JOIN steps s ON s.session_id = m.session_id AND s.stack_id = m.stack_id
	                           AND s.kind = m.kind
	 GROUP BY m.session_id, m.stack_id, m.kind)
SELECT f.session_id, f.stack_id, kn.name AS kind, f.n AS snapshots,
       CASE WHEN f.sxx > 0 THEN f.sxy / f.sxx * 60 ELSE 0.0 END AS bytes_per_minute,
       CASE WHEN f.sxx > 0 THEN f.sxy / f.sxx * f.duration ELSE 0.0 END AS trend_bytes,
       CASE WHEN f.sxx > 0 AND f.syy > 0 THEN f.sxy * f.sxy / (f.sxx * f.syy) ELSE 0.0 END AS fit,
       CASE WHEN f.moved > 0 THEN f.up / f.moved ELSE 0.0 END AS steady,
       CASE WHEN f.ymax > 0 THEN f.last_bytes / f.ymax ELSE 0.0 END AS retained,
       f.first_bytes, f.last_bytes, f.ymax AS max_bytes, f.last_count AS live_count
  FROM fit f JOIN kinds kn ON kn.id = f.kind;

CREATE VIEW leak_suspects AS
SELECT t.session_id, t.stack_id, t.kind, t.snapshots, t.bytes_per_minute, t.trend_bytes,
       t.fit, t.steady, t.retained, t.first_bytes, t.last_bytes, t.max_bytes, t.live_count,
       st.text AS stack
  FROM leak_trend t JOIN stack_text st ON st.stack_id = t.stack_id
 WHERE t.snapshots >= 3 AND t.bytes_per_minute > 0 AND t.fit >= 0.8 AND t.steady >= 0.9
   AND t.retained >= 0.9 AND t.trend_bytes >= 1;

-- snapshot_totals as in version 9, the totals of a snapshot written since
-- version 14 read from its columns (a snapshot with totals only has no
-- rows to add up).
DROP VIEW IF EXISTS snapshot_totals;
CREATE VIEW snapshot_totals AS
SELECT s.id AS snapshot_id, s.session_id, s.time, s.reason, s.rss_bytes,
       coalesce(s.live_heap_bytes + s.live_mmap_bytes,
                (SELECT total(v.live_bytes) FROM bucket_at v
                  WHERE v.snapshot_id = s.id AND v.kind IN ('heap', 'mmap'))) AS live_bytes,
       coalesce(s.live_count, (SELECT total(v.live_count) FROM bucket_at v
                  WHERE v.snapshot_id = s.id AND v.kind IN ('heap', 'mmap'))) AS live_count,
       s.samples, s.drops, s.unwind_failures,
       coalesce(s.live_rss_bytes, (SELECT total(v.live_bytes) FROM bucket_at v
                  WHERE v.snapshot_id = s.id AND v.kind = 'rss')) AS resident_bytes,
       coalesce(s.live_swap_bytes, (SELECT total(v.live_bytes) FROM bucket_at v
                  WHERE v.snapshot_id = s.id AND v.kind = 'swap')) AS swapped_bytes,
       s.rss_anon_bytes, s.swap_bytes, s.rss_samples, s.rss_lost, s.rss_read_time, s.paths
  FROM snapshots s;
