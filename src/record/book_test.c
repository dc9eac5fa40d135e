/* book_test -- the attacher's bookkeeping (src/record/book.c) through its
 * API alone: the weight of a sample, callstacks interned by pcs and kind,
 * the estimates a sampled allocation and its free move, resident pages
 * gained and lost, the buckets a snapshot takes (only those changed), the
 * peak copy and its rows, tables grown far past their first size, and the
 * live total of each kind.  Each case states what must come out; the
 * program prints every mismatch and exits 1 if there is one. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "book.h"
#include "unit.h"

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b)) + 1e-9;
}

/* The id of bucket (pc, kind): a stack of one pc. */
static uint32_t bucket(struct ha_book *b, uint64_t pc, int kind)
{
	int is_new;
	return ha_book_bucket(b, &pc, 1, kind, &is_new);
}

/* Bucket id's values must be: allocated, freed and live (count, bytes). */
static void values_case(const char *what, const struct ha_book *b, uint32_t id, double ac, double ab,
                        double fc, double fb, double lc, double lb)
{
	const struct ha_db_bucket *v = ha_book_value(b, id);
	EXPECT(v != NULL, "%s: bucket %u has no value", what, id);
	if (!v)
		return;
	EXPECT(near(v->alloc_count, ac) && near(v->alloc_bytes, ab),
	       "%s: alloc %g/%g, want %g/%g", what, v->alloc_count, v->alloc_bytes, ac, ab);
	EXPECT(near(v->free_count, fc) && near(v->free_bytes, fb),
	       "%s: free %g/%g, want %g/%g", what, v->free_count, v->free_bytes, fc, fb);
	EXPECT(near(v->live_count, lc) && near(v->live_bytes, lb),
	       "%s: live %g/%g, want %g/%g", what, v->live_count, v->live_bytes, lc, lb);
}

/* The stack ids of rows, sorted, as a string ("1,3"). */
static const char *ids_of(const struct ha_db_bucket *rows, size_t n)
{
	static char out[256];
	int64_t ids[32];
	size_t k = n < 32 ? n : 32, len = 0;
	for (size_t i = 0; i < k; i++)
		ids[i] = rows[i].stack_id;
	for (size_t i = 1; i < k; i++)
		for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
			int64_t t = ids[j];
			ids[j] = ids[j - 1];
			ids[j - 1] = t;
		}
	out[0] = '\0';
	for (size_t i = 0; i < k && len < sizeof out - 24; i++)
		len += (size_t)snprintf(out + len, sizeof out - len, "%s%lld", i ? "," : "", (long long)ids[i]);
	return out;
}

/* The row of stack id among rows, NULL if none. */
static const struct ha_db_bucket *row_of(const struct ha_db_bucket *rows, size_t n, int64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].stack_id == id)
			return &rows[i];
	return NULL;
}

/* ha_book_take_changed must give exactly the buckets want ("1,3"). */
static void changed_case(const char *what, struct ha_book *b, const char *want)
{
	struct ha_db_bucket *rows;
	size_t n = ha_book_take_changed(b, &rows);
	const char *got = ids_of(rows, n);
	EXPECT(strcmp(got, want) == 0, "%s: changed buckets {%s}, want {%s}", what, got, want);
	EXPECT((n == 0) == (rows == NULL), "%s: %zu rows at %p", what, n, (void *)rows);
	free(rows);
}

static void test_weight(void)
{
	EXPECT(ha_sample_weight(100, 1) == 1.0, "interval 1: weight %g, want 1", ha_sample_weight(100, 1));
	EXPECT(ha_sample_weight(100, 0) == 1.0, "interval 0: weight %g, want 1", ha_sample_weight(100, 0));
	double w = ha_sample_weight(4096, 4096), want = 1.0 / (1.0 - exp(-1.0));
	EXPECT(near(w, want), "size = interval: weight %.9g, want %.9g", w, want);
	EXPECT(ha_sample_weight(0, 512) == ha_sample_weight(1, 512), "size 0 weighs %g, size 1 %g",
	       ha_sample_weight(0, 512), ha_sample_weight(1, 512));
	/* A small block stands for about interval / size of its size; a
	 * block far above the interval for itself. */
	w = ha_sample_weight(16, 524288);
	EXPECT(fabs(w - 524288.0 / 16) < 1, "16 B at 512 KiB: weight %g, want about 32768", w);
	w = ha_sample_weight(64u << 20, 4096);
	EXPECT(w >= 1.0 && w < 1.0 + 1e-12, "64 MiB at 4 KiB: weight %.15g, want 1", w);
	EXPECT(ha_sample_weight(100, 1000) > ha_sample_weight(200, 1000),
	       "a larger block must weigh less");
}

static void test_intern(void)
{
	struct ha_book *b = ha_book_new();
	uint64_t pcs[3] = { 0x401000, 0x402000, 0x403000 };
	int is_new = -1, n = -1, kind = -1;

	EXPECT(ha_book_count(b) == 0, "a new book has %zu buckets", ha_book_count(b));
	uint32_t a = ha_book_bucket(b, pcs, 3, HA_KIND_HEAP, &is_new);
	EXPECT(a == 1 && is_new == 1, "first stack: id %u new %d, want 1 new", a, is_new);
	uint32_t again = ha_book_bucket(b, pcs, 3, HA_KIND_HEAP, &is_new);
	EXPECT(again == a && is_new == 0, "same pcs and kind: id %u new %d, want %u not new", again,
	       is_new, a);
	uint32_t mm = ha_book_bucket(b, pcs, 3, HA_KIND_MMAP, &is_new);
	EXPECT(mm != a && mm != 0 && is_new == 1, "same pcs, kind mmap: id %u new %d, want another new id",
	       mm, is_new);
	uint32_t pre = ha_book_bucket(b, pcs, 2, HA_KIND_HEAP, &is_new);
	EXPECT(pre != a && pre != mm && is_new == 1, "a prefix of the pcs: id %u new %d, want a new id",
	       pre, is_new);
	uint64_t other[3] = { 0x401000, 0x402000, 0x403001 };
	uint32_t o = ha_book_bucket(b, other, 3, HA_KIND_HEAP, &is_new);
	EXPECT(o != a && is_new == 1, "the last pc differs: id %u new %d, want a new id", o, is_new);
	/* No pcs (a walk that found no frame): a bucket of its own.  (The
	 * array is still passed: book.h does not allow NULL.) */
	uint32_t empty = ha_book_bucket(b, pcs, 0, HA_KIND_HEAP, &is_new);
	EXPECT(empty != 0 && is_new == 1, "no pcs: id %u new %d, want a new id", empty, is_new);
	EXPECT(ha_book_bucket(b, other, 0, HA_KIND_HEAP, &is_new) == empty && is_new == 0,
	       "no pcs again: want the same id");
	EXPECT(ha_book_count(b) == 5, "%zu buckets, want 5", ha_book_count(b));

	/* The book keeps its own copy of the pcs. */
	pcs[0] = 0xdead;
	const uint64_t *got = ha_book_pcs(b, a, &n, &kind);
	EXPECT(got && n == 3 && kind == HA_KIND_HEAP && got[0] == 0x401000 && got[2] == 0x403000,
	       "pcs of bucket %u: n %d kind %d, first %#llx", a, n, kind,
	       got ? (unsigned long long)got[0] : 0ull);
	got = ha_book_pcs(b, mm, &n, &kind);
	EXPECT(got && kind == HA_KIND_MMAP, "bucket %u: kind %d, want mmap", mm, kind);
	EXPECT(ha_book_pcs(b, 0, &n, &kind) == NULL && ha_book_pcs(b, 6, &n, &kind) == NULL,
	       "ids 0 and count + 1 must have no pcs");
	const struct ha_db_bucket *v = ha_book_value(b, mm);
	EXPECT(v && v->stack_id == mm && v->kind == HA_KIND_MMAP && v->alloc_count == 0,
	       "value of bucket %u: its id, its kind, nothing booked", mm);
	EXPECT(ha_book_value(b, 0) == NULL && ha_book_value(b, 6) == NULL,
	       "ids 0 and count + 1 must have no value");
	/* Interning books nothing: no snapshot needs the bucket yet. */
	changed_case("after interning only", b, "");
	ha_book_free(b);
}

static void test_alloc_release(void)
{
	struct ha_book *b = ha_book_new();
	uint32_t s = bucket(b, 0x400100, HA_KIND_HEAP);

	ha_book_alloc(b, s, 0x1000, 100, 2.0);
	values_case("one sample of weight 2", b, s, 2, 200, 0, 0, 2, 200);
	EXPECT(near(ha_book_live_bytes(b, HA_KIND_HEAP), 200), "live heap %g, want 200",
	       ha_book_live_bytes(b, HA_KIND_HEAP));
	EXPECT(ha_book_release(b, 0x1000) == 1, "the free of a live sample must be found");
	values_case("its free", b, s, 2, 200, 2, 200, 0, 0);
	EXPECT(ha_book_live_bytes(b, HA_KIND_HEAP) == 0, "live heap %g after the free, want 0",
	       ha_book_live_bytes(b, HA_KIND_HEAP));
	changed_case("alloc and free", b, "1");

	/* Frees of what is not live change nothing. */
	EXPECT(ha_book_release(b, 0x1000) == 0, "a second free of one block must not be found");
	EXPECT(ha_book_release(b, 0x5000) == 0, "an address never sampled must not be found");
	EXPECT(ha_book_release(b, 0) == 0, "address 0 must not be found");
	values_case("unknown frees", b, s, 2, 200, 2, 200, 0, 0);
	changed_case("after unknown frees", b, "");

	/* What cannot be booked is not: address 0, no bucket. */
	ha_book_alloc(b, s, 0, 10, 1.0);
	ha_book_alloc(b, 0, 0x2000, 10, 1.0);
	ha_book_alloc(b, 99, 0x2000, 10, 1.0);
	values_case("allocs at 0 or of no bucket", b, s, 2, 200, 2, 200, 0, 0);
	EXPECT(ha_book_release(b, 0x2000) == 0, "an alloc of no bucket must not be live");

	/* The same address sampled twice without a free seen: the first is
	 * freed, the second is live, one free finds it. */
	ha_book_alloc(b, s, 0x3000, 10, 1.0);
	ha_book_alloc(b, s, 0x3000, 30, 1.0);
	values_case("an address sampled twice", b, s, 4, 240, 3, 210, 1, 30);
	EXPECT(ha_book_release(b, 0x3000) == 1 && ha_book_release(b, 0x3000) == 0,
	       "an address sampled twice is freed once");
	values_case("and freed", b, s, 4, 240, 4, 240, 0, 0);

	/* Weights that are not whole: the free brings live back to exactly
	 * zero, never a rounding below it. */
	double w = ha_sample_weight(100, 4096);
	for (uint64_t a = 0x10000; a < 0x10000 + 7 * 64; a += 64)
		ha_book_alloc(b, s, a, 100, w);
	for (uint64_t a = 0x10000; a < 0x10000 + 7 * 64; a += 64)
		EXPECT(ha_book_release(b, a) == 1, "sample at %#llx not found", (unsigned long long)a);
	const struct ha_db_bucket *v = ha_book_value(b, s);
	EXPECT(v->live_count == 0 && v->live_bytes == 0, "live %g/%g after every free, want exactly 0",
	       v->live_count, v->live_bytes);
	EXPECT(ha_book_live_bytes(b, HA_KIND_HEAP) == 0, "live heap %g, want 0",
	       ha_book_live_bytes(b, HA_KIND_HEAP));
	EXPECT(near(v->alloc_count, 4 + 7 * w), "alloc count %g, want %g", v->alloc_count, 4 + 7 * w);
	ha_book_free(b);
}

static void test_gain_lose(void)
{
	struct ha_book *b = ha_book_new();
	uint32_t r = bucket(b, 0x400200, HA_KIND_RSS);

	ha_book_gain(b, r, 8192);
	values_case("two pages made resident", b, r, 2, 8192, 0, 0, 2, 8192);
	EXPECT(near(ha_book_live_bytes(b, HA_KIND_RSS), 8192), "live rss %g, want 8192",
	       ha_book_live_bytes(b, HA_KIND_RSS));
	EXPECT(ha_book_live_bytes(b, -1) == 0, "heap + mmap %g: resident pages are not allocations",
	       ha_book_live_bytes(b, -1));
	ha_book_lose(b, r, 4096);
	values_case("one page lost", b, r, 2, 8192, 1, 4096, 1, 4096);
	EXPECT(near(ha_book_live_bytes(b, HA_KIND_RSS), 4096), "live rss %g, want 4096",
	       ha_book_live_bytes(b, HA_KIND_RSS));
	changed_case("gain and lose", b, "1");

	/* Nothing, less than nothing, NaN, no bucket: ignored. */
	ha_book_gain(b, r, 0);
	ha_book_gain(b, r, -4096);
	ha_book_gain(b, r, NAN);
	ha_book_lose(b, r, -4096);
	ha_book_lose(b, r, NAN);
	ha_book_gain(b, 0, 4096);
	ha_book_gain(b, 7, 4096);
	ha_book_lose(b, 7, 4096);
	values_case("ignored gains and losses", b, r, 2, 8192, 1, 4096, 1, 4096);
	changed_case("after ignored gains and losses", b, "");

	/* Losing more than is resident never shows a negative amount. */
	ha_book_lose(b, r, 3 * 4096.0);
	const struct ha_db_bucket *v = ha_book_value(b, r);
	EXPECT(v->live_bytes == 0 && v->live_count == 0, "live %g/%g after losing too much, want 0",
	       v->live_count, v->live_bytes);
	EXPECT(ha_book_live_bytes(b, HA_KIND_RSS) == 0, "live rss %g, want 0",
	       ha_book_live_bytes(b, HA_KIND_RSS));
	ha_book_free(b);
}

static void test_changed(void)
{
	struct ha_book *b = ha_book_new();
	uint32_t s1 = bucket(b, 1, HA_KIND_HEAP), s2 = bucket(b, 2, HA_KIND_HEAP);
	uint32_t s3 = bucket(b, 3, HA_KIND_MMAP);
	struct ha_db_bucket *rows;

	ha_book_alloc(b, s1, 0x100, 10, 1);
	ha_book_alloc(b, s3, 0x200, 20, 1);
	ha_book_alloc(b, s1, 0x300, 30, 1);
	size_t n = ha_book_take_changed(b, &rows);
	EXPECT(strcmp(ids_of(rows, n), "1,3") == 0, "changed {%s}, want {1,3}", ids_of(rows, n));
	const struct ha_db_bucket *r1 = row_of(rows, n, s1), *r3 = row_of(rows, n, s3);
	EXPECT(r1 && near(r1->live_bytes, 40) && near(r1->alloc_count, 2) && r1->kind == HA_KIND_HEAP,
	       "bucket 1's row must hold its cumulative values");
	EXPECT(r3 && near(r3->live_bytes, 20) && r3->kind == HA_KIND_MMAP,
	       "bucket 3's row must hold its values and kind");
	free(rows);
	changed_case("nothing since", b, "");
	ha_book_alloc(b, s2, 0x400, 5, 1);
	changed_case("one bucket since", b, "2");
	ha_book_release(b, 0x200);
	changed_case("a free since", b, "3");
	ha_book_free(b);
}

static void test_peak(void)
{
	struct ha_book *b = ha_book_new();
	uint32_t a = bucket(b, 1, HA_KIND_HEAP), bb = bucket(b, 2, HA_KIND_HEAP);
	uint32_t c = bucket(b, 3, HA_KIND_MMAP);
	struct ha_db_bucket *rows;

	EXPECT(ha_book_take_peak(b, &rows) == 0 && rows == NULL, "no copy kept: no peak rows");
	ha_book_alloc(b, a, 0x10, 100, 1);
	EXPECT(ha_book_peak_dirty(b) == 1, "%zu dirty, want 1", ha_book_peak_dirty(b));
	changed_case("before the copy", b, "1");
	ha_book_keep_peak(b);
	EXPECT(ha_book_peak_dirty(b) == 0, "%zu dirty after the copy, want 0", ha_book_peak_dirty(b));

	/* After the copy: a grows, b comes and is written, c comes. */
	ha_book_alloc(b, a, 0x20, 50, 1);
	ha_book_alloc(b, bb, 0x30, 10, 1);
	changed_case("after the copy", b, "1,2");
	ha_book_alloc(b, c, 0x40, 7, 1);
	EXPECT(ha_book_peak_dirty(b) == 3, "%zu dirty, want 3", ha_book_peak_dirty(b));

	size_t n = ha_book_take_peak(b, &rows);
	EXPECT(strcmp(ids_of(rows, n), "1,2") == 0, "peak rows {%s}, want {1,2}: a as copied, "
	       "b (written since) as zero, c (never written) none", ids_of(rows, n));
	const struct ha_db_bucket *ra = row_of(rows, n, a), *rb = row_of(rows, n, bb);
	EXPECT(ra && near(ra->live_bytes, 100) && near(ra->alloc_count, 1),
	       "a's peak row: live %g, want 100 (its value at the copy)", ra ? ra->live_bytes : -1);
	EXPECT(rb && rb->live_bytes == 0 && rb->alloc_count == 0 && rb->kind == HA_KIND_HEAP,
	       "b's peak row must be zero, with its kind");
	free(rows);
	/* Every bucket given a peak row is written again at its value now. */
	n = ha_book_take_changed(b, &rows);
	EXPECT(strcmp(ids_of(rows, n), "1,2,3") == 0, "changed after the peak {%s}, want {1,2,3}",
	       ids_of(rows, n));
	ra = row_of(rows, n, a);
	EXPECT(ra && near(ra->live_bytes, 150), "a after the peak: live %g, want 150 (now)",
	       ra ? ra->live_bytes : -1);
	free(rows);

	/* A new copy holds every bucket as it is now. */
	ha_book_keep_peak(b);
	n = ha_book_take_peak(b, &rows);
	EXPECT(strcmp(ids_of(rows, n), "1,2,3") == 0, "second peak rows {%s}, want {1,2,3}",
	       ids_of(rows, n));
	const struct ha_db_bucket *rc = row_of(rows, n, c);
	EXPECT(rc && near(rc->live_bytes, 7) && rc->kind == HA_KIND_MMAP, "c's second peak row: live %g",
	       rc ? rc->live_bytes : -1);
	free(rows);
	ha_book_free(b);
}

/* Far past the first tables (1,024 index slots, 256 buckets, 1,024 live
 * slots): every bucket keeps its id, every block stays findable through
 * the growths and the deletions between. */
static void test_growth(void)
{
	enum { NSTACKS = 20000, NBLOCKS = 50000 };
	struct ha_book *b = ha_book_new();
	int is_new, bad = 0;
	uint64_t pcs[2];

	for (uint32_t i = 0; i < NSTACKS; i++) {
		pcs[0] = 0x400000 + i;
		pcs[1] = 0x500000 + (i % 7);
		uint32_t id = ha_book_bucket(b, pcs, 2, (int)(i % 2), &is_new);
		bad += id != i + 1 || !is_new;
	}
	EXPECT(bad == 0, "%d of %d new stacks without the next id", bad, NSTACKS);
	EXPECT(ha_book_count(b) == NSTACKS, "%zu buckets, want %d", ha_book_count(b), NSTACKS);
	bad = 0;
	for (uint32_t i = 0; i < NSTACKS; i++) {
		pcs[0] = 0x400000 + i;
		pcs[1] = 0x500000 + (i % 7);
		int n, kind;
		uint32_t id = ha_book_bucket(b, pcs, 2, (int)(i % 2), &is_new);
		const uint64_t *got = ha_book_pcs(b, i + 1, &n, &kind);
		bad += id != i + 1 || is_new || !got || n != 2 || got[0] != pcs[0] || kind != (int)(i % 2);
	}
	EXPECT(bad == 0, "%d of %d stacks not found again as interned", bad, NSTACKS);

	/* Blocks 16 bytes apart, as a heap hands them out. */
	double want = 0;
	for (uint32_t i = 0; i < NBLOCKS; i++) {
		ha_book_alloc(b, 1 + (i % NSTACKS) / 2 * 2, 0x7f0000000000ull + 16ull * i, 16 + i % 100, 1);
		want += 16 + i % 100;
	}
	EXPECT(near(ha_book_live_bytes(b, HA_KIND_HEAP), want), "live heap %g, want %g",
	       ha_book_live_bytes(b, HA_KIND_HEAP), want);
	/* Every third block freed, then the rest, each found exactly once. */
	bad = 0;
	for (uint32_t i = 0; i < NBLOCKS; i += 3)
		bad += ha_book_release(b, 0x7f0000000000ull + 16ull * i) != 1;
	for (uint32_t i = 0; i < NBLOCKS; i++)
		bad += ha_book_release(b, 0x7f0000000000ull + 16ull * i) != (i % 3 != 0);
	EXPECT(bad == 0, "%d of %d frees found the wrong answer", bad, NBLOCKS + NBLOCKS / 3 + 1);
	EXPECT(ha_book_live_bytes(b, HA_KIND_HEAP) == 0, "live heap %g after every free, want 0",
	       ha_book_live_bytes(b, HA_KIND_HEAP));
	struct ha_db_bucket *rows;
	size_t n = ha_book_take_changed(b, &rows);
	EXPECT(n == NSTACKS / 2, "%zu changed buckets, want %d (those allocated in)", n, NSTACKS / 2);
	free(rows);
	ha_book_free(b);
}

static void test_live_by_kind(void)
{
	struct ha_book *b = ha_book_new();
	uint32_t h = bucket(b, 0x400300, HA_KIND_HEAP), m = bucket(b, 0x400300, HA_KIND_MMAP);
	uint32_t r = bucket(b, 0x400300, HA_KIND_RSS), s = bucket(b, 0x400300, HA_KIND_SWAP);

	ha_book_alloc(b, h, 0x1000, 100, 1);
	ha_book_alloc(b, h, 0x2000, 50, 2);
	ha_book_alloc(b, m, 0x3000, 200, 1);
	ha_book_gain(b, r, 4096);
	ha_book_gain(b, s, 8192);
	EXPECT(near(ha_book_live_bytes(b, HA_KIND_HEAP), 200), "heap %g, want 200",
	       ha_book_live_bytes(b, HA_KIND_HEAP));
	EXPECT(near(ha_book_live_bytes(b, HA_KIND_MMAP), 200), "mmap %g, want 200",
	       ha_book_live_bytes(b, HA_KIND_MMAP));
	EXPECT(near(ha_book_live_bytes(b, -1), 400), "heap + mmap %g, want 400",
	       ha_book_live_bytes(b, -1));
	EXPECT(near(ha_book_live_bytes(b, HA_KIND_RSS), 4096), "rss %g, want 4096",
	       ha_book_live_bytes(b, HA_KIND_RSS));
	EXPECT(near(ha_book_live_bytes(b, HA_KIND_SWAP), 8192), "swap %g, want 8192",
	       ha_book_live_bytes(b, HA_KIND_SWAP));
	ha_book_release(b, 0x3000);
	EXPECT(ha_book_live_bytes(b, HA_KIND_MMAP) == 0 && near(ha_book_live_bytes(b, -1), 200),
	       "after the mmap's free: mmap %g, heap + mmap %g", ha_book_live_bytes(b, HA_KIND_MMAP),
	       ha_book_live_bytes(b, -1));
	ha_book_free(b);
}

int main(void)
{
	test_weight();
	test_intern();
	test_alloc_release();
	test_gain_lose();
	test_changed();
	test_peak();
	test_growth();
	test_live_by_kind();
	ha_book_free(NULL);
	return UNIT_RESULT("book: weights, interning, alloc/free, pages, changed buckets, peak copy, growth");
}
