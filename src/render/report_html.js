/* report_html.js -- the script of heapdiff's HTML report.  report_html.c
 * writes it into the page after the data (<script type="application/json"
 * id="hd-data">, described there); it builds everything the reader sees:
 *
 *   header       the target, the session, the peak, the totals at A and B;
 *   chart        the estimated live heap at every snapshot of the session
 *                (heap and mmap stacked) and the RSS as a line, in time
 *                order (the attacher's 'peak' snapshot has the time of the
 *                peak, not of its writing; a snapshot of a target gone by
 *                then has the last RSS read before its exit, drawn when it
 *                was read, or none); with resident memory (--rss),
 *                the attributed resident memory as a line against the
 *                kernel's RssAnon (dashed), and the swapped memory (dotted)
 *                when there is any: lines, never stacked onto the heap,
 *                which is the same memory; the baseline, the peak, A and B
 *                marked, sampling-interval raises and drops too; hovering
 *                shows the nearest snapshot;
 *   flame graph  of a view (growth A -> B, live at the peak, live at B),
 *                laid out as report_svg.c does (children sorted by name;
 *                warm = grew, blue = shrank, purple = both), drawn as
 *                absolutely positioned elements so that the names are in
 *                the DOM; nodes narrower than 0.5 px are skipped, which
 *                keeps thousands of call paths fast; click zooms, search
 *                takes a regular expression and shows the matched share,
 *                flame or icicle;
 *   tables       the top call paths of the view (a row opens to its whole
 *                stack), the top functions of A -> B (flat and
 *                cumulative), the leak suspects (call paths and functions)
 *                with a sparkline each, and with
 *                resident memory the functions' heap and mmap against their
 *                resident and swapped memory (heapdiff --heap-vs-rss).
 *
 * Every name is untrusted (it comes from the profiled process): names are
 * only ever put in as text (textContent, createTextNode, setAttribute),
 * never as markup.  The state that a link can carry is in the URL hash:
 * #view=diff|peak|b, search=REGEX, mode=flame|icicle, zoom=NODE-PATH,
 * scale=heap|rss (the chart's y axis).
 * When done, <html data-rendered="MS"> holds the time the rendering took
 * (performance.now); errors land in #hd-errors (the page's first script). */
(function () {
	'use strict';
	var T0 = performance.now();
	var D = JSON.parse(document.getElementById('hd-data').textContent);
	var F = D.frames;
	var SVGNS = 'http://www.w3.org/2000/svg';
	var FRAME_H = 18;

	/* ------------------------------------------------------------ helpers */

	function el(tag, cls, text) {
		var e = document.createElement(tag);
		if (cls) e.className = cls;
		if (text !== undefined && text !== null) e.textContent = String(text);
		return e;
	}
	function add(parent, child) { parent.appendChild(child); return child; }
	function sv(tag, attrs) {
		var e = document.createElementNS(SVGNS, tag);
		for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
		return e;
	}
	function fmtBytes(v, sign) {
		var units = ['KiB', 'MiB', 'GiB', 'TiB'], a = Math.abs(v), s = v < 0 ? '-' : sign && v > 0 ? '+' : '';
		if (a < 0.5) { a = 0; s = ''; }
		if (a < 1024) return s + Math.round(a) + ' B';
		var u = -1;
		while (a >= 1024 && u < 3) { a /= 1024; u++; }
		return s + (a < 10 ? a.toFixed(2) : a < 100 ? a.toFixed(1) : a.toFixed(0)) + ' ' + units[u];
	}
	function fmtCount(v, sign) {
		var r = Math.round(v);
		if (Math.abs(v) < 0.5) r = 0;
		return (sign && r > 0 ? '+' : '') + String(r).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
	}
	function pad(n) { return n < 10 ? '0' + n : String(n); }
	function fmtTime(t) {
		var d = new Date(t * 1000);
		return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
			pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
	}
	function fmtDur(s) {
		var a = Math.abs(s), sg = s < 0 ? '-' : '';
		if (a < 120) return sg + (a < 10 ? a.toFixed(1) : a.toFixed(0)) + ' s';
		if (a < 7200) return sg + (a / 60).toFixed(1) + ' min';
		return sg + (a / 3600).toFixed(1) + ' h';
	}
	/* The kernel's figures of a snapshot (RSS, RssAnon, VmSwap): null when
	 * not read (the target was gone), never 0; when the snapshot's
	 * rss_read_time is set, they are the last read before the exit. */
	var UNREAD = 'unknown (not read: the target was gone)';
	function fmtKernel(v, sign) { return v === null ? UNREAD : fmtBytes(v, sign); }
	function lastRead(time, readTime, side) {
		return readTime === null ? '' : ' (' + (side ? side + ': ' : '') + 'last read before the exit, ' +
			Math.max(0, time - readTime).toFixed(1) + ' s earlier)';
	}
	function base(p) { var i = p.lastIndexOf('/'); return i >= 0 ? p.substring(i + 1) : p; }
	function frameName(fi) { var f = F[fi]; return f[0] + (f[4] ? ' (inlined)' : ''); }
	/* A frame in a flame graph, which merges frames by it: a Python one
	 * (module py) with its file and line, as the SVG (hd_frame_label):
	 * Python's names repeat from file to file. */
	function flameName(fi) {
		var f = F[fi];
		return f[3] === 'py' && f[1] ? f[0] + ' (' + base(f[1]) + (f[2] > 0 ? ':' + f[2] : '') + ')' : frameName(fi);
	}
	function frameSite(fi) {
		var f = F[fi];
		return f[1] ? f[1] + (f[2] > 0 ? ':' + f[2] : '') : '';
	}
	function kindName(k) { return ['heap', 'mmap', 'rss', 'swap'][k] || 'other'; }
	/* The view's kind: heap and mmap (what was allocated), or rss or swap
	 * (where it is: pages). */
	var PHYS = D.objects === 'pages', RSS = !!D.session.rss;
	var EMPTY = PHYS ? 'no ' + D.what : 'no live allocations';

	/* ------------------------------------------------------------ state */

	var views = {};
	D.views.forEach(function (v) { views[v.key] = v; });
	var S = { view: views.diff ? 'diff' : 'b', search: '', mode: 'flame', zoom: '', scale: '', scaleSet: false };
	(function readHash() {
		var h = location.hash.replace(/^#/, '');
		h.split('&').forEach(function (kv) {
			var i = kv.indexOf('='), k, v;
			if (i < 0) return;
			k = kv.substring(0, i);
			try { v = decodeURIComponent(kv.substring(i + 1)); } catch (e) { return; }
			if (k === 'view' && views[v]) S.view = v;
			else if (k === 'search') S.search = v;
			else if (k === 'mode' && (v === 'flame' || v === 'icicle')) S.mode = v;
			else if (k === 'zoom') S.zoom = v;
			else if (k === 'scale' && (v === 'heap' || v === 'rss')) { S.scale = v; S.scaleSet = true; }
		});
	})();
	function writeHash() {
		var h = 'view=' + S.view;
		if (S.mode !== 'flame') h += '&mode=' + S.mode;
		if (S.search) h += '&search=' + encodeURIComponent(S.search);
		if (S.zoom) h += '&zoom=' + encodeURIComponent(S.zoom);
		if (S.scaleSet) h += '&scale=' + S.scale;
		try { history.replaceState(null, '', '#' + h); } catch (e) { /* file:// in some browsers */ }
	}

	var app = document.getElementById('hd-app');

	/* ------------------------------------------------------------ header */

	function fact(dl, label, value, cls) {
		var d = add(dl, el('div'));
		add(d, el('dt', null, label));
		var dd = add(d, el('dd', cls, value));
		return dd;
	}

	function snapLine(s) {
		if (!s) return '';
		return (D.a && D.a.db !== D.b.db ? s.db + ': ' : '') + 'snapshot ' + s.id + ' (' + (s.reason || '?') + ') at ' + fmtTime(s.time) + ': ' +
			fmtBytes(s.live) + ' live, ' + (RSS ? fmtBytes(s.resident) + ' resident (RssAnon ' + fmtKernel(s.rss_anon) + '), ' : '') +
			'RSS ' + fmtKernel(s.rss) + lastRead(s.time, s.rss_read_time);
	}

	function header() {
		var T = D.target, SS = D.session, dur = (SS.end !== null ? SS.end : D.b.time) - SS.start;
		add(app, el('h1', null, 'heapdiff: ' + (T.comm || '?') + ' (pid ' + T.pid + ')'));
		var sec = add(app, el('section'));
		var dl = add(sec, el('dl', 'facts'));
		fact(dl, 'Target', (T.exe || '?') + '  \u2014  pid ' + T.pid + ', ' + (T.comm || '?'), 'mono');
		fact(dl, 'Session ' + SS.id, 'attached ' + fmtTime(SS.start) + ', ' + fmtDur(dur) +
			(SS.end === null ? ' (no clean detach)' : ''));
		var ndrop = SS.drops;
		fact(dl, 'Samples', fmtCount(SS.samples) + ' samples, ' + fmtCount(ndrop) + ' dropped, ' +
			fmtCount(SS.unwind_failures) + ' unwind failures', ndrop > 0 ? 'warn' : null);
		fact(dl, 'Sampling interval', fmtBytes(SS.interval) + ' (mean)');
		if (RSS) fact(dl, 'Resident memory', 'by first touch: 1 in ' + fmtCount(SS.rss_period) + ' page faults sampled');
		fact(dl, PHYS ? 'Peak of the ' + D.what : 'Peak', fmtBytes(D.peak.live) + ' at ' + fmtTime(D.peak.time) + ' (snapshot ' +
			D.peak.id + (D.peak.reason === 'peak' ? ', recorded by the attacher' : '') + ')');
		if (D.a) fact(dl, 'A', snapLine(D.a));
		fact(dl, D.a ? 'B' : 'Snapshot', snapLine(D.b));
		if (D.a) {
			/* A gone target's RSS is the last read (said so) or unknown:
			 * never a drop to 0. */
			var dl2 = D.b.live - D.a.live, dr = D.b.rss === null || D.a.rss === null ? null : D.b.rss - D.a.rss;
			var last = dr === null ? '' : D.b.rss_read_time !== null ? lastRead(D.b.time, D.b.rss_read_time, 'B')
				: lastRead(D.a.time, D.a.rss_read_time, 'A');
			fact(dl, 'A \u2192 B', fmtBytes(dl2, 1) + ' live, ' +
				(RSS ? fmtBytes(D.b.resident - D.a.resident, 1) + ' resident, ' : '') + 'RSS ' + fmtKernel(dr, 1) + last +
				' in ' + fmtDur(D.b.time - D.a.time), dl2 > 0 ? 'grew' : null);
		}
		if (D.note) {
			var nt = add(sec, el('div', 'warn', D.note.replace(/^note: /, '').replace(/heapdiff --peak shows the peak$/,
				'"Live at the peak" below shows it')));
			nt.id = 'hd-note';
			nt.style.marginTop = '6px';
		}
		if (D.names_missing) {
			var nm = add(sec, el('div', 'warn', 'No names for the frames of ' +
				D.names_missing.split('\n').join('; ') + ': apt install the -dbgsym package of the ' +
				'file, set DEBUGINFOD_URLS, or give heapdiff --debug-dir DIR, then make this page again.'));
			nm.id = 'hd-names';
			nm.style.marginTop = '6px';
		}
		var src = add(sec, el('div', 'muted mono', D.db));
		src.style.marginTop = '6px';
	}

	/* ----------------------------------------------------- memory chart */

	/* Where RssAnon went at each snapshot (heapattach's breakdown, schema
	 * version 10): the terms stacked in their order, unexplained on top when
	 * it is positive (a negative one is said in the tooltip), under the
	 * heap chart.  Nothing when the session has none. */
	function memoryChart() {
		var M = D.memory;
		if (!M || !M.rows || !M.rows.length) return;
		add(app, el('h2', null, 'Where RssAnon went'));
		var sec = add(app, el('section'));
		var box = add(sec, el('div'));
		box.id = 'hd-memory';
		var colors = ['#3b7dd8', '#8fb3e8', '#e0a030', '#d0603a', '#a0a0a0', '#7a5cc0',
			'#4aa58a', '#c04a90', '#707070', '#e8d44d'];
		var W = Math.max(box.clientWidth || 1000, 400), H = 220, L = 70, R = 16, T = 12, B = 26;
		var rows = M.rows, t0 = rows[0][0], t1 = rows[rows.length - 1][0], ymax = 1;
		rows.forEach(function (r) { ymax = Math.max(ymax, r[1]); });
		ymax *= 1.08;
		function X(t) { return L + (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5) * (W - L - R); }
		function Y(v) { return T + (1 - v / ymax) * (H - T - B); }
		var svg = sv('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img',
			'aria-label': 'RssAnon broken down into terms over the session' });
		svg.id = 'hd-memory-svg';
		var step = Math.pow(2, Math.ceil(Math.log(ymax / 5) / Math.LN2));
		for (var v = 0; v <= ymax; v += step) {
			svg.appendChild(sv('line', { x1: L, x2: W - R, y1: Y(v), y2: Y(v), 'class': 'axis' }));
			var tx = sv('text', { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end', 'class': 'tick' });
			tx.textContent = fmtBytes(v);
			svg.appendChild(tx);
		}
		var below = rows.map(function () { return 0; });
		M.terms.forEach(function (name, k) {
			var top = rows.map(function (r, i) { return below[i] + Math.max(0, r[2 + k]); });
			var pts = rows.map(function (r, i) { return X(r[0]).toFixed(1) + ',' + Y(top[i]).toFixed(1); });
			for (var j = rows.length - 1; j >= 0; j--) pts.push(X(rows[j][0]).toFixed(1) + ',' + Y(below[j]).toFixed(1));
			var pg = sv('polygon', { points: pts.join(' '), 'data-term': name });
			pg.setAttribute('style', 'fill:' + colors[k % colors.length] + ';fill-opacity:0.8;stroke:none');
			var last = rows[rows.length - 1];
			var tip = sv('title', {});
			tip.textContent = name + ': ' + fmtBytes(last[2 + k]) + ' at the last breakdown';
			pg.appendChild(tip);
			svg.appendChild(pg);
			below = top;
		});
		svg.appendChild(sv('polyline', { points: rows.map(function (r) { return X(r[0]).toFixed(1) + ',' + Y(r[1]).toFixed(1); }).join(' '),
			'class': 'anon', 'data-series': 'rss_anon' }));
		box.appendChild(svg);
		var lg = add(sec, el('div', 'legend')), last = rows[rows.length - 1];
		M.terms.forEach(function (name, k) {
			var s = add(lg, el('span'));
			var i = add(s, el('i'));
			i.style.background = colors[k % colors.length];
			s.appendChild(document.createTextNode(name + ' ' + fmtBytes(last[2 + k])));
		});
		var s2 = add(lg, el('span'));
		s2.appendChild(document.createTextNode('line: RssAnon ' + fmtBytes(last[1]) + ' (the last breakdown; heapdiff --memory has the arenas)'));
	}

	/* ------------------------------------------------------------ chart */

	function chart() {
		add(app, el('h2', null, 'Memory over time'));
		var sec = add(app, el('section'));
		var box = add(sec, el('div'));
		box.id = 'hd-chart';
		var legendBox = add(sec, el('div', 'legend'));
		var P = D.snaps.map(function (s, i) {
			return { id: s[0], t: s[1], reason: s[2], rss: s[3], heap: s[4], mmap: s[5],
				samples: s[6], drops: s[7], interval: s[8], resident: s[9], swapped: s[10],
				anon: s[11], vmswap: s[12], rt: s[13], paths: s[14] !== 0, order: i };
		});
		if (!P.length) { add(box, el('div', 'empty', 'no snapshots')); return; }
		var baseline = P[0];
		P.sort(function (a, b) { return a.t - b.t || a.id - b.id; });
		/* Interval raises; drops (a cumulative counter) where it rose. */
		var seen = 0;
		for (var i = 0; i < P.length; i++) {
			P[i].ival = P[i].interval > D.session.interval;
			P[i].dropped = P[i].drops > seen ? P[i].drops - seen : 0;
			if (P[i].drops > seen) seen = P[i].drops;
		}
		/* The attributed resident memory is an estimate like the heap: it
		 * counts for the heap's scale; the kernel's counters for RSS's. */
		var liveMax = 0, rssMax = 0, anySwap = false;
		P.forEach(function (p) {
			liveMax = Math.max(liveMax, p.heap + p.mmap, RSS ? p.resident : 0);
			rssMax = Math.max(rssMax, p.rss || 0, RSS ? p.anon || 0 : 0);
			if (p.swapped > 0) anySwap = true;
		});
		/* The RSS can dwarf the sampled heap: then the scale follows the
		 * heap (the RSS line leaves the top) until the reader asks. */
		if (S.scale === '') S.scale = rssMax > 8 * liveMax ? 'heap' : 'rss';
		var scaleBtn = el('button', null, '');
		scaleBtn.type = 'button';
		scaleBtn.addEventListener('click', function () {
			S.scale = S.scale === 'heap' ? 'rss' : 'heap';
			S.scaleSet = true;
			writeHash();
			box.textContent = '';
			draw();
		});
		draw();
		function draw() {
		scaleBtn.textContent = S.scale === 'heap' ? 'Scale: live heap (RSS off the top) — show RSS' : 'Scale: RSS — fit the live heap';
		var W = Math.max(box.clientWidth || 1000, 400), H = 280, L = 70, R = 16, T = 22, B = 30;
		var t0 = P[0].t, t1 = P[P.length - 1].t, ymax = Math.max(1, liveMax, S.scale === 'heap' ? 0 : rssMax) * 1.08;
		function X(t) { return L + (t1 > t0 ? (t - t0) / (t1 - t0) : 0.5) * (W - L - R); }
		function Y(v) { return T + (1 - v / ymax) * (H - T - B); }
		var svg = sv('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img',
			'aria-label': 'estimated live heap and RSS over the session' });
		svg.id = 'hd-chart-svg';
		/* y axis: 5 ticks at round values */
		var step = Math.pow(2, Math.ceil(Math.log(ymax / 5) / Math.LN2));
		for (var v = 0; v <= ymax; v += step) {
			svg.appendChild(sv('line', { x1: L, x2: W - R, y1: Y(v), y2: Y(v), 'class': 'axis' }));
			var tx = sv('text', { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end', 'class': 'tick' });
			tx.textContent = fmtBytes(v);
			svg.appendChild(tx);
		}
		for (var k = 0; k <= 5; k++) {
			var tt = t0 + (t1 - t0) * k / 5, xt = sv('text', { x: X(tt), y: H - 10, 'text-anchor': 'middle', 'class': 'tick' });
			xt.textContent = k === 0 ? fmtTime(t0).substring(11) : '+' + fmtDur(tt - t0);
			svg.appendChild(xt);
		}
		/* stacked areas: heap at the bottom, mmap on it */
		function area(lo, hi, cls, name) {
			var pts = [];
			P.forEach(function (p) { pts.push(X(p.t).toFixed(1) + ',' + Y(hi(p)).toFixed(1)); });
			for (var j = P.length - 1; j >= 0; j--) pts.push(X(P[j].t).toFixed(1) + ',' + Y(lo(P[j])).toFixed(1));
			var pg = sv('polygon', { points: pts.join(' '), 'class': cls, 'data-series': name });
			svg.appendChild(pg);
		}
		area(function () { return 0; }, function (p) { return p.heap; }, 'heap', 'heap');
		area(function (p) { return p.heap; }, function (p) { return p.heap + p.mmap; }, 'mmap', 'mmap');
		var clip = sv('clipPath', { id: 'hd-plot' });
		clip.appendChild(sv('rect', { x: 0, y: T - 6, width: W, height: H - T - B + 6 }));
		svg.appendChild(clip);
		function line(get, cls, name) {
			svg.appendChild(sv('polyline', { points: P.map(function (p) { return X(p.t).toFixed(1) + ',' + Y(get(p)).toFixed(1); }).join(' '),
				'class': cls, 'data-series': name, 'clip-path': 'url(#hd-plot)' }));
		}
		/* The kernel's lines: a figure at the time it was read (the last
		 * before an exit), none where it was not read. */
		function kernelLine(get, cls, name) {
			var Q = P.filter(function (p) { return get(p) !== null; }).map(function (p) {
				return { t: p.rt !== null ? p.rt : p.t, v: get(p) };
			});
			Q.sort(function (a, b) { return a.t - b.t; });
			svg.appendChild(sv('polyline', { points: Q.map(function (q) { return X(q.t).toFixed(1) + ',' + Y(q.v).toFixed(1); }).join(' '),
				'class': cls, 'data-series': name, 'clip-path': 'url(#hd-plot)' }));
		}
		kernelLine(function (p) { return p.rss; }, 'rss', 'rss');
		if (RSS) {
			kernelLine(function (p) { return p.anon; }, 'anon', 'rss_anon');
			line(function (p) { return p.resident; }, 'resident', 'resident');
			if (anySwap) line(function (p) { return p.swapped; }, 'swapped', 'swapped');
		}
		/* markers */
		var byId = {};
		P.forEach(function (p) { byId[p.id] = p; });
		var marks = [], used = {};
		function mark(id, label, cls) {
			var p = byId[id];
			if (!p) return;
			var x = X(p.t), row = 0;
			while (used[row] && used[row].some(function (ux) { return Math.abs(ux - x) < 100; })) row++;
			(used[row] = used[row] || []).push(x);
			var g = sv('g', { 'class': 'marker ' + cls, 'data-mark': label });
			g.appendChild(sv('line', { x1: x, x2: x, y1: T - 4 + row * 12, y2: H - B }));
			/* Near the right edge the label goes to the left of its line. */
			var right = x > W - R - 8 * label.length - 6;
			var t = sv('text', { x: right ? x - 3 : x + 3, y: T + 6 + row * 12, 'text-anchor': right ? 'end' : 'start' });
			t.textContent = label;
			g.appendChild(t);
			marks.push(g);
		}
		mark(baseline.id, 'baseline', 'base');
		if (D.a && D.a.session === D.b.session && D.a.db === D.b.db) mark(D.a.id, 'A', 'ab');
		mark(D.b.id, D.a ? 'B' : 'snapshot', 'ab');
		mark(D.peak.id, 'peak ' + fmtBytes(D.peak.live), 'peak');
		marks.forEach(function (g) { svg.appendChild(g); });
		var nival = 0, ndrop = 0;
		P.forEach(function (p) {
			var x = X(p.t);
			if (p.ival) {
				nival++;
				var tri = sv('path', { d: 'M' + (x - 6) + ',' + (H - B + 2) + 'l6,-10l6,10z', 'class': 'ival' });
				var ti = sv('title');
				ti.textContent = 'sampling interval raised to ' + fmtBytes(p.interval) + ' (snapshot ' + p.id + ')';
				tri.appendChild(ti);
				svg.appendChild(tri);
			}
			if (p.dropped) {
				ndrop++;
				var c = sv('circle', { cx: x, cy: H - B - 16, r: 3.5, 'class': 'drop' });
				var td = sv('title');
				td.textContent = fmtCount(p.dropped) + ' samples dropped before snapshot ' + p.id;
				c.appendChild(td);
				svg.appendChild(c);
			}
		});
		/* hover: the nearest snapshot */
		var guide = sv('line', { y1: T, y2: H - B, 'class': 'guide', visibility: 'hidden' });
		var dot = sv('circle', { r: 3, 'class': 'dot', visibility: 'hidden' });
		svg.appendChild(guide);
		svg.appendChild(dot);
		var overlay = sv('rect', { x: L, y: 0, width: W - L - R, height: H, fill: 'transparent' });
		svg.appendChild(overlay);
		box.appendChild(svg);
		var tip = add(box, el('div', 'tip'));
		tip.style.display = 'none';
		overlay.addEventListener('mousemove', function (ev) {
			var r = svg.getBoundingClientRect(), x = (ev.clientX - r.left) * W / r.width, best = P[0];
			P.forEach(function (p) { if (Math.abs(X(p.t) - x) < Math.abs(X(best.t) - x)) best = p; });
			var bx = X(best.t);
			guide.setAttribute('x1', bx); guide.setAttribute('x2', bx); guide.setAttribute('visibility', 'visible');
			dot.setAttribute('cx', bx); dot.setAttribute('cy', Y(best.heap + best.mmap)); dot.setAttribute('visibility', 'visible');
			tip.textContent = '';
			add(tip, el('b', null, 'snapshot ' + best.id + ' (' + (best.reason || '?') + ')'));
			if (!best.paths) add(tip, el('div', 'muted', 'totals only: its call paths are written once a minute'));
			add(tip, el('div', 'muted', fmtTime(best.t) + ', +' + fmtDur(best.t - t0)));
			var tb = add(tip, el('table'));
			var rows = [['heap', fmtBytes(best.heap)], ['mmap', fmtBytes(best.mmap)], ['live', fmtBytes(best.heap + best.mmap)]];
			if (RSS) rows.push(['resident', fmtBytes(best.resident)], ['RssAnon', fmtKernel(best.anon)],
				['swapped', fmtBytes(best.swapped)], ['VmSwap', fmtKernel(best.vmswap)]);
			rows.push(['RSS', fmtKernel(best.rss) + lastRead(best.t, best.rt)], ['samples', fmtCount(best.samples)], ['drops', fmtCount(best.drops)],
				['interval', best.interval ? fmtBytes(best.interval) : '?']);
			rows.forEach(function (kv) {
				var tr = add(tb, el('tr'));
				add(tr, el('td', null, kv[0]));
				add(tr, el('td', null, kv[1]));
			});
			tip.style.display = '';
			var px = bx * r.width / W;
			tip.style.left = (px + 12 + 220 > r.width ? px - 12 - tip.offsetWidth : px + 12) + 'px';
			tip.style.top = '20px';
		});
		overlay.addEventListener('mouseleave', function () {
			tip.style.display = 'none';
			guide.setAttribute('visibility', 'hidden');
			dot.setAttribute('visibility', 'hidden');
		});
		var lg = legendBox;
		lg.textContent = '';
		function key(color, text) {
			var s = add(lg, el('span'));
			var i = add(s, el('i'));
			i.style.background = color;
			s.appendChild(document.createTextNode(text));
		}
		key('var(--heap)', 'heap (estimated live)');
		key('var(--mmap)', 'mmap (estimated live)');
		var nlast = P.filter(function (p) { return p.rt !== null && p.rss !== null; }).length;
		key('var(--rss)', 'RSS' + (nlast ? ' (its last point: the last read before the exit)' : ''));
		if (RSS) {
			key('var(--resident)', 'resident (estimated, by first touch; not added to the heap)');
			key('var(--anon)', 'RssAnon (the kernel\u2019s, dashed)');
			if (anySwap) key('var(--swapped)', 'swapped (estimated, dotted)');
		}
		key('var(--peak)', 'peak');
		key('var(--ab)', D.a ? 'A and B' : 'the snapshot shown');
		if (nival) key('var(--warn)', nival + ' snapshot' + (nival > 1 ? 's' : '') + ' with a raised sampling interval');
		if (ndrop) key('var(--bad)', ndrop + ' snapshot' + (ndrop > 1 ? 's' : '') + ' after dropped samples');
		add(lg, el('span', null, P.length + ' snapshots'));
		lg.appendChild(scaleBtn);
		}
	}

	/* ------------------------------------------------------------ flame graph */

	/* Colours as report_svg.c: warm = grew, blue = shrank, purple = both. */
	function color(n, depth) {
		var w = n.g + n.s, neg = w > 0 ? n.s / w : 0, h = 2166136261;
		for (var i = 0; i < n.name.length; i++) h = Math.imul(h ^ n.name.charCodeAt(i), 16777619) >>> 0;
		var v = (h % 1000) / 1000;
		if (depth === 0) return 'rgb(200,200,200)';
		if (neg < 0.05) return 'rgb(' + (205 + Math.floor(50 * v)) + ',' + Math.floor(80 + 130 * v) + ',' + Math.floor(40 * v) + ')';
		if (neg > 0.95) return 'rgb(' + Math.floor(40 + 60 * v) + ',' + Math.floor(110 + 70 * v) + ',' + (225 + Math.floor(30 * v)) + ')';
		return 'rgb(' + (160 + Math.floor(40 * (1 - neg))) + ',' + Math.floor(80 + 40 * v) + ',' + (190 + Math.floor(40 * neg)) + ')';
	}

	function newNode(name, fi, parent) {
		return { name: name, fi: fi, parent: parent, g: 0, s: 0, gn: 0, sn: 0, kids: new Map() };
	}
	function addTo(n, bytes, objects) {
		if (bytes >= 0) { n.g += bytes; n.gn += objects; } else { n.s -= bytes; n.sn -= objects; }
	}
	var trees = {};
	function tree(key) {
		if (trees[key]) return trees[key];
		var v = views[key], root = newNode('all', -1, null);
		v.rows.forEach(function (r) {
			var n = root;
			addTo(n, r[1], r[2]);
			if (r[0] !== 0) {
				var kn = '[' + kindName(r[0]) + ']', c = n.kids.get(kn);
				if (!c) { c = newNode(kn, -1, n); n.kids.set(kn, c); }
				n = c;
				addTo(n, r[1], r[2]);
			}
			for (var k = r[3].length - 1; k >= 0; k--) {
				var fi = r[3][k], name = flameName(fi), ch = n.kids.get(name);
				if (!ch) { ch = newNode(name, fi, n); n.kids.set(name, ch); }
				n = ch;
				addTo(n, r[1], r[2]);
			}
			if (r.length > 4) {
				/* Call paths past the page's first 5,000, summed under
				 * these outermost frames (report_html.c). */
				var on = '(' + r[4] + ' other call path' + (r[4] === 1 ? '' : 's') + ')', oc = n.kids.get(on);
				if (!oc) { oc = newNode(on, -1, n); n.kids.set(on, oc); }
				addTo(oc, r[1], r[2]);
			}
		});
		/* Flatten: x offset (bytes), depth, children sorted by name. */
		var flat = [], maxd = 0;
		(function walk(n, x, d, path) {
			n.x = x; n.w = n.g + n.s; n.d = d; n.i = flat.length; n.path = path;
			flat.push(n);
			if (d > maxd) maxd = d;
			var ks = Array.from(n.kids.keys()).sort(function (a, b) { return a < b ? -1 : a > b ? 1 : 0; });
			ks.forEach(function (k, j) {
				var c = n.kids.get(k);
				walk(c, x, d + 1, path ? path + '.' + j : String(j));
				x += c.w;
			});
		})(root, 0, 0, '');
		trees[key] = { root: root, flat: flat, maxd: maxd, diff: !!v.diff, view: v };
		return trees[key];
	}

	var flameBox, details, matchedEl, searchIn, resetBtn, curTree, zoomNode = null, matchRe = null;

	function nodeText(t, n) {
		var parts = [n.name];
		if (t.diff) {
			parts.push(fmtBytes(n.g - n.s, 1) + ', ' + fmtCount(n.gn - n.sn, 1) + ' objects (grew ' +
				fmtBytes(n.g) + ', shrank ' + fmtBytes(n.s) + ')');
		} else {
			parts.push(fmtBytes(n.w) + ', ' + fmtCount(n.gn) + ' objects, ' +
				(t.root.w > 0 ? (100 * n.w / t.root.w).toFixed(2) : '0') + '%');
		}
		if (n.fi >= 0) {
			var site = frameSite(n.fi), mod = F[n.fi][3];
			if (site) parts.push(site);
			if (mod) parts.push(mod);
		}
		return parts.join('  \u2014  ');
	}

	function render() {
		var t = curTree, W = flameBox.clientWidth || 1200;
		flameBox.textContent = '';
		if (!(t.root.w > 0)) {
			flameBox.style.height = 'auto';
			var msg = add(flameBox, el('div', 'empty', t.diff ? 'no call path changed' : EMPTY));
			if (S.view !== 'peak' && views.peak && views.peak.rows.length) {
				msg.appendChild(document.createTextNode(' \u2014 the ' + (PHYS ? D.what : 'heap') + ' peaked at ' + fmtBytes(D.peak.live) + ': '));
				var go = add(msg, el('button', null, 'show the ' + D.what + ' at the peak'));
				go.type = 'button';
				go.addEventListener('click', function () { S.zoom = ''; setView('peak'); });
			}
			matchedEl.textContent = '';
			resetBtn.disabled = true;
			return;
		}
		var z = zoomNode || t.root, x0 = z.x, w0 = z.w > 0 ? z.w : t.root.w, d0 = z.d;
		var frag = document.createDocumentFragment(), H = (t.maxd + 1) * FRAME_H, icicle = S.mode === 'icicle';
		flameBox.style.height = H + 'px';
		var eps = 1e-9 * t.root.w, shown = 0;
		for (var i = 0; i < t.flat.length; i++) {
			var n = t.flat[i], left, width, anc = false;
			if (n.d < d0) {
				if (!(n.x <= x0 + eps && n.x + n.w >= x0 + w0 - eps)) continue;
				anc = true; left = 0; width = W;
			} else {
				if (n.x < x0 - eps || n.x + n.w > x0 + w0 + eps) continue;
				left = (n.x - x0) / w0 * W; width = n.w / w0 * W;
			}
			if (width < 0.5) continue;
			var e = document.createElement('div');
			e.className = 'fr' + (anc ? ' anc' : '') + (matchRe && n.d > 0 && matchRe.test(n.name) ? ' match' : '');
			e.style.left = left.toFixed(1) + 'px';
			e.style.width = Math.max(width - 1, 0.5).toFixed(1) + 'px';
			e.style.top = (icicle ? n.d * FRAME_H : H - (n.d + 1) * FRAME_H) + 'px';
			e.style.background = color(n, n.d);
			e.setAttribute('data-i', i);
			if (width > 28) e.textContent = n.name;
			else e.setAttribute('data-name', n.name);
			frag.appendChild(e);
			shown++;
		}
		flameBox.appendChild(frag);
		flameBox.setAttribute('data-frames', shown);
		resetBtn.disabled = !zoomNode;
		updateMatched();
	}

	function updateMatched() {
		var t = curTree;
		if (!matchRe || !(t.root.w > 0)) { matchedEl.textContent = ''; return; }
		/* The share of the topmost matching nodes (a match inside a match
		 * counts once). */
		var sum = 0, bytes = 0, count = 0;
		(function walk(n) {
			if (n.d > 0 && matchRe.test(n.name)) { sum += n.w; bytes += n.g - n.s; count++; return; }
			n.kids.forEach(walk);
		})(t.root);
		matchedEl.textContent = 'Matched: ' + (100 * sum / t.root.w).toFixed(2) + '% (' +
			fmtBytes(t.diff ? bytes : sum, t.diff) + ', ' + count + ' frame' + (count === 1 ? '' : 's') + ')';
	}

	function setSearch(text) {
		S.search = text;
		searchIn.classList.remove('bad');
		matchRe = null;
		if (text) {
			try { matchRe = new RegExp(text); } catch (e) {
				searchIn.classList.add('bad');
				matchedEl.textContent = 'bad regular expression: ' + e.message;
			}
		}
		writeHash();
		render();
	}

	function zoomTo(n) {
		zoomNode = n && n !== curTree.root ? n : null;
		S.zoom = zoomNode ? zoomNode.path : '';
		writeHash();
		render();
	}

	var viewBtns = {}, tableBox;
	function setView(key) {
		S.view = key;
		curTree = tree(key);
		zoomNode = null;
		if (S.zoom) {
			var hit = null;
			curTree.flat.forEach(function (n) { if (n.path === S.zoom) hit = n; });
			zoomNode = hit;
			if (!hit) S.zoom = '';
		}
		for (var k in viewBtns) viewBtns[k].classList.toggle('on', k === key);
		document.getElementById('hd-flame-title').textContent = curTree.view.title;
		document.documentElement.setAttribute('data-view', key);
		writeHash();
		render();
		rowsTable();
	}

	function flame() {
		var h2 = add(app, el('h2', null, 'Flame graph'));
		h2.id = 'hd-flame-title';
		var sec = add(app, el('section'));
		var bar = add(sec, el('div', 'toolbar'));
		var lv = PHYS ? (D.kind === 'rss' ? 'Resident' : 'Swapped') : 'Live';
		var names = { diff: 'Growth A \u2192 B', peak: lv + ' at the peak', b: D.a ? lv + ' at B' : lv + ' at the snapshot' };
		D.views.forEach(function (v) {
			var b = add(bar, el('button', null, names[v.key]));
			b.type = 'button';
			b.setAttribute('data-view', v.key);
			b.title = v.title;
			b.addEventListener('click', function () { S.zoom = ''; setView(v.key); });
			viewBtns[v.key] = b;
		});
		resetBtn = add(bar, el('button', null, 'Reset zoom'));
		resetBtn.type = 'button';
		resetBtn.addEventListener('click', function () { zoomTo(null); });
		var mode = add(bar, el('button', null, S.mode === 'icicle' ? 'Flame' : 'Icicle'));
		mode.type = 'button';
		mode.title = 'root at the bottom (flame) or at the top (icicle)';
		mode.addEventListener('click', function () {
			S.mode = S.mode === 'icicle' ? 'flame' : 'icicle';
			mode.textContent = S.mode === 'icicle' ? 'Flame' : 'Icicle';
			writeHash();
			render();
		});
		searchIn = add(bar, el('input'));
		searchIn.type = 'search';
		searchIn.placeholder = 'Search (regular expression)';
		searchIn.value = S.search;
		searchIn.addEventListener('input', function () { setSearch(searchIn.value); });
		matchedEl = add(bar, el('span', 'muted'));
		matchedEl.id = 'hd-matched';
		flameBox = add(sec, el('div'));
		flameBox.id = 'hd-flame';
		details = add(sec, el('div', 'mono', '\u00a0'));
		details.id = 'hd-details';
		var legend = add(sec, el('div', 'legend'));
		legend.textContent = (PHYS ? 'Call paths that first touched the pages.  ' : '') +
			'Width: bytes (in the growth view, grown plus shrunk); warm: grew, blue: shrank, ' +
			'purple: both.  Click a frame to zoom; the root, the background, Escape or "Reset zoom" go back.';
		/* Hover: the details line under the graph and a tooltip at the
		 * pointer. */
		sec.style.position = 'relative';
		var ftip = add(sec, el('div', 'tip'));
		ftip.style.display = 'none';
		flameBox.addEventListener('mousemove', function (ev) {
			var i = ev.target.getAttribute && ev.target.getAttribute('data-i');
			if (i === null || i === undefined) {
				details.textContent = '\u00a0';
				ftip.style.display = 'none';
				return;
			}
			var n = curTree.flat[+i], parts = nodeText(curTree, n).split('  \u2014  ');
			details.textContent = parts.join('  \u2014  ');
			ftip.textContent = '';
			add(ftip, el('b', null, parts[0]));
			for (var k = 1; k < parts.length; k++) add(ftip, el('div', k > 1 ? 'muted' : null, parts[k]));
			ftip.style.display = '';
			var r = sec.getBoundingClientRect(), x = ev.clientX - r.left + 14, y = ev.clientY - r.top + 16;
			if (x + ftip.offsetWidth > r.width - 4) x = Math.max(4, ev.clientX - r.left - 14 - ftip.offsetWidth);
			ftip.style.left = x + 'px';
			ftip.style.top = y + 'px';
		});
		flameBox.addEventListener('mouseleave', function () {
			details.textContent = '\u00a0';
			ftip.style.display = 'none';
		});
		flameBox.addEventListener('click', function (ev) {
			var i = ev.target.getAttribute && ev.target.getAttribute('data-i');
			if (i === null || i === undefined) {
				if (ev.target === flameBox && zoomNode) zoomTo(null); /* the background */
				return;
			}
			var n = curTree.flat[+i];
			zoomTo(n === zoomNode ? n.parent : n);
		});
		document.addEventListener('keydown', function (ev) {
			if (ev.key === 'Escape' && zoomNode && ev.target !== searchIn) zoomTo(null);
		});
		if (S.search) {
			try { matchRe = new RegExp(S.search); } catch (e) { matchRe = null; searchIn.classList.add('bad'); }
		}
	}

	/* ------------------------------------------------------------ tables */

	function stackList(frames, folded) {
		var ol = el('ol', 'stack');
		frames.forEach(function (fi) {
			var li = add(ol, el('li'));
			add(li, el('span', 'mono', frameName(fi)));
			var site = frameSite(fi), mod = F[fi][3];
			if (site) { li.appendChild(document.createTextNode('  ')); add(li, el('span', 'site mono', site)); }
			if (mod) { li.appendChild(document.createTextNode('  ')); add(li, el('span', 'site', '[' + base(mod) + ']')); }
		});
		if (folded) add(ol, el('li', 'muted', '(' + folded + ' allocator frames folded)'));
		return ol;
	}

	function leafCell(td, frames, kind) {
		if (!frames.length) { td.textContent = '(no frames)'; return; }
		add(td, el('span', 'mono', frameName(frames[0])));
		var site = frameSite(frames[0]);
		if (site) { td.appendChild(document.createTextNode('  ')); add(td, el('span', 'site mono', site)); }
		if (kind) { td.appendChild(document.createTextNode('  ')); add(td, el('span', 'site', '[' + kindName(kind) + ']')); }
	}

	function expandable(tbody, tr, ncols, frames, folded) {
		tr.className = 'row';
		tr.addEventListener('click', function () {
			if (tr.nextSibling && tr.nextSibling.className === 'stack') {
				tbody.removeChild(tr.nextSibling);
				tr.classList.remove('open');
				return;
			}
			var st = el('tr', 'stack'), td = add(st, el('td'));
			td.colSpan = ncols;
			add(td, stackList(frames, folded));
			tbody.insertBefore(st, tr.nextSibling);
			tr.classList.add('open');
		});
	}

	function headRow(table, cols) {
		var tr = add(add(table, el('thead')), el('tr'));
		cols.forEach(function (c) { add(tr, el('th', c[1] ? 'n' : null, c[0])); });
	}

	function rowsTable(all) {
		var v = curTree.view, diff = !!v.diff;
		var whole = v.rows.filter(function (r) { return r.length < 5; });
		var rows = whole.filter(function (r) { return diff ? r[1] > 0 : true; });
		document.getElementById('hd-rows-title').textContent = diff ?
			'Top growing call paths, snapshot ' + v.from + ' \u2192 ' + v.to + ' (' + fmtDur(v.dt) + ')' :
			'Top call paths of the ' + D.what + (v.key === 'peak' ? ' at the peak' : '') +
			', snapshot ' + v.to;
		tableBox.textContent = '';
		if (!rows.length) {
			add(tableBox, el('div', 'empty', diff ? 'no call path grew' : EMPTY));
			return;
		}
		var cols = [[diff ? 'grew' : PHYS ? D.kind === 'rss' ? 'resident bytes' : 'swapped bytes' : 'live bytes', 1], [D.objects, 1]];
		if (diff) cols.push(['per minute', 1]);
		cols.push(['leaf function (click for the stack)', 0]);
		var n = rankTable(tableBox, 'hd-rows', cols, rows, all, function (tbody, tr, r, ncols) {
			add(tr, el('td', 'n', fmtBytes(r[1], diff)));
			add(tr, el('td', 'n', fmtCount(r[2], diff)));
			if (diff) add(tr, el('td', 'n', v.dt > 0 ? fmtBytes(r[1] / v.dt * 60, 1) + '/min' : '\u2014'));
			leafCell(add(tr, el('td', 'fn')), r[3], r[0]);
			expandable(tbody, tr, ncols, r[3], 0);
		});
		var shrank = diff ? whole.length - rows.length : 0;
		if (shrank)
			add(tableBox, el('div', 'more muted', shrank + ' other call path' + (shrank === 1 ? '' : 's') +
				' shrank (blue in the flame graph)'));
		if (v.rest)
			add(tableBox, el('div', 'more muted', v.rest + ' call path' + (v.rest === 1 ? '' : 's') + ' of ' +
				v.paths + (diff ? ' that changed less' : ' that hold less') + ' are summed by their callers ' +
				'(\u201cother call paths\u201d in the flame graph); heapdiff -f json --top 0 lists each'));
		if (n < rows.length) showAll(tableBox, rows.length + ' call paths', function () { rowsTable(true); });
	}

	/* The top functions of A -> B (or at B): flat, what a function
	 * allocated itself, with cumulative, what it and its callees did
	 * (heapdiff --by function). */
	function topFunctions(box, all) {
		var rows = D.top_functions, diff = !!D.a;
		box.textContent = '';
		if (!rows.length) {
			add(box, el('div', 'empty', diff ? 'no function changed' : EMPTY));
			return;
		}
		add(box, el('div', 'muted', 'Flat: allocated in the function itself (its call paths\u2019 leaf, the ' +
			'allocator\u2019s frames folded); cumulative: in it or in what it called, each call path once.'));
		var cols = [['flat', 1], [D.objects, 1], ['cumulative', 1], ['call paths', 1], ['function', 0]];
		var n = rankTable(box, 'hd-funcs', cols, rows, all, function (tbody, tr, r) {
			add(tr, el('td', 'n', fmtBytes(r.flat_bytes, diff)));
			add(tr, el('td', 'n', fmtCount(r.flat_objects, diff)));
			add(tr, el('td', 'n', fmtBytes(r.cum_bytes, diff)));
			add(tr, el('td', 'n', fmtCount(r.cum_paths, 0)));
			funcCell(add(tr, el('td', 'fn')), r);
		});
		if (n < rows.length) showAll(box, rows.length + ' functions', function () { topFunctions(box, true); });
	}

	/* A function's cell: its name, file and [module] (rows of
	 * heap_vs_rss.c and report_funcs.c). */
	function funcCell(td, r) {
		add(td, el('span', 'mono', r['function']));
		if (r.file) { td.appendChild(document.createTextNode('  ')); add(td, el('span', 'site mono', r.file)); }
		if (r.module) { td.appendChild(document.createTextNode('  ')); add(td, el('span', 'site', '[' + base(r.module) + ']')); }
	}

	/* A numbered table of rows in box: the first D.top unless all; fill
	 * adds a row's other cells.  The number of rows shown. */
	function rankTable(box, id, cols, rows, all, fill) {
		var table = add(box, el('table', 'rows'));
		table.id = id;
		headRow(table, [['#', 1]].concat(cols));
		var tbody = add(table, el('tbody'));
		var top = D.top > 0 ? D.top : Infinity, n = all ? rows.length : Math.min(rows.length, top);
		for (var i = 0; i < n; i++) {
			var tr = add(tbody, el('tr'));
			add(tr, el('td', 'n', i + 1));
			fill(tbody, tr, rows[i], cols.length + 1);
		}
		return n;
	}

	function showAll(box, what, again) {
		var b = add(add(box, el('div', 'more')), el('button', null, 'show all ' + what));
		b.type = 'button';
		b.addEventListener('click', again);
	}

	function spark(series, ts) {
		var w = 120, h = 26, max = 0, t0 = ts[0], t1 = ts[ts.length - 1];
		series.forEach(function (y) { if (y > max) max = y; });
		var s = sv('svg', { width: w, height: h, viewBox: '0 0 ' + w + ' ' + h, 'class': 'spark' });
		var pts = series.map(function (y, i) {
			var x = t1 > t0 ? (ts[i] - t0) / (t1 - t0) * (w - 4) + 2 : w / 2;
			return x.toFixed(1) + ',' + (h - 2 - (max > 0 ? y / max : 0) * (h - 4)).toFixed(1);
		});
		s.appendChild(sv('polyline', { points: pts.join(' ') }));
		return s;
	}

	function leaks() {
		var Lk = D.leaks;
		var h2 = add(app, el('h2', null, 'Leak suspects'));
		h2.id = 'hd-leaks-title';
		var sec = add(app, el('section'));
		sec.id = 'hd-leaks';
		if (Lk.nsnaps < 3) {
			add(sec, el('div', 'empty', 'Too few snapshots for a trend: leak suspects need at least 3 snapshots ' +
				'of the session (not counting the peak snapshot), and this one has ' + Lk.nsnaps + '.'));
			return;
		}
		var grown = PHYS ? D.what : 'live bytes';
		add(sec, el('div', 'muted', 'Call paths and functions whose ' + grown + ' grew steadily over the ' + Lk.nsnaps +
			' snapshots of the session (' + fmtDur(Lk.duration) + '): a fitted slope > 0 with R\u00b2 \u2265 0.8, ' +
			'rarely falling, not fallen back.  ' + Lk.count + ' suspect' + (Lk.count === 1 ? '' : 's') + '; ' +
			Lk.grew + ' other call path' + (Lk.grew === 1 ? '' : 's') + ' grew without a steady trend.'));
		if (!Lk.suspects.length) {
			add(sec, el('div', 'empty', 'No leak suspects: no call path\u2019s or function\u2019s ' + grown + ' grew steadily.'));
			return;
		}
		var table = add(sec, el('table', 'rows'));
		table.id = 'hd-leak-table';
		var cols = [['per minute', 1], ['fitted growth', 1], [PHYS ? 'now' : 'live now', 1], ['fit', 1], [grown + ' over the session', 0]];
		if (Lk.scan !== null) cols.push(['at the scan of snapshot ' + Lk.scan, 0]);
		cols.push(['leaf function (click for the stack)', 0]);
		headRow(table, cols);
		var tbody = add(table, el('tbody'));
		Lk.suspects.forEach(function (s) {
			var tr = add(tbody, el('tr'));
			add(tr, el('td', 'n', fmtBytes(s.rate, 1) + '/min'));
			add(tr, el('td', 'n', fmtBytes(s.growth, 1)));
			add(tr, el('td', 'n', fmtBytes(s.live)));
			add(tr, el('td', 'n', s.fit.toFixed(2)));
			var sp = add(tr, el('td'));
			if (s.series.length) sp.appendChild(spark(s.series, Lk.t));
			if (Lk.scan !== null) add(tr, el('td', s.reach && s.reach[0] > 0 ? 'leaked' : 'held', s.reach ? reachVerdict(s.reach) :
				s.what === 'stack' ? 'not seen by the scan' : '\u2014'));
			var td = add(tr, el('td', 'fn'));
			leafCell(td, s.frames, s.kind);
			if (s.what && s.what !== 'stack') {
				/* A function (heapdiff --leaks): what it adds up, and
				 * the callers whose cumulative growth this is. */
				add(td, el('div', 'site', (s.what === 'function' ? 'function: allocated in it over ' :
					'cumulative: in it or its callees, explained by no other suspect, over ') +
					s.paths + ' call path' + (s.paths === 1 ? '' : 's')));
				if (s.via.length)
					add(td, el('div', 'site', 'via ' + s.via.slice(0, 4).map(frameName).join(', ') +
						(s.via.length > 4 ? ' and ' + (s.via.length - 4) + ' more' : '')));
				return;
			}
			expandable(tbody, tr, cols.length, s.frames, s.folded);
		});
		if (Lk.count > Lk.suspects.length)
			add(sec, el('div', 'more muted', (Lk.count - Lk.suspects.length) + ' more suspects: heapdiff --leaks --top 0 lists all'));
	}

	/* A reachability scan's figures of a call path (report_html.c, REACH):
	 * [unreachable bytes, objects, reachable bytes, objects, unknown
	 * bytes, [[root, name, bytes, objects, hops], ...]]. */
	function holderText(h) {
		return h[0] + ' ' + h[1] + ' (' + fmtBytes(h[2]) + (h[4] > 0 ? ', ' + h[4] + ' hop' + (h[4] === 1 ? '' : 's') : '') + ')';
	}
	function heldBy(x, max) {
		var hs = x[5];
		if (!hs.length) return x[2] > 0 ? '?' : '\u2014';
		return hs.slice(0, max).map(holderText).join('; ') + (hs.length > max ? '; ' + (hs.length - max) + ' more' : '');
	}
	/* As heapdiff --leaks says it: unreachable growth is a leak,
	 * reachable growth is held by someone. */
	function reachVerdict(x) {
		if (x[2] <= 0) return fmtBytes(x[0]) + ' unreachable' + (x[0] > 0 ? ' (a leak: nothing points to it)' : '');
		return (x[0] > 0 ? fmtBytes(x[0]) + ' unreachable, ' : '') + fmtBytes(x[2]) + ' reachable, held by ' +
			heldBy(x, 1) + (x[0] > 0 ? '' : ' (growth, not a leak)');
	}

	/* Leaked or held (heapattach --reach): per call path of the latest
	 * scan up to B, what no root reaches any more and who holds the rest. */
	function reachSection(all) {
		var R = D.reach, sec = document.getElementById('hd-reach');
		if (!sec) {
			var h2 = add(app, el('h2', null, 'Leaked or held' + (R ? ': the reachability scan of snapshot ' + R.snapshot : '')));
			h2.id = 'hd-reach-title';
			sec = add(app, el('section'));
			sec.id = 'hd-reach';
		}
		sec.textContent = '';
		if (!R) {
			add(sec, el('div', 'empty', 'No reachability scan in this session up to snapshot ' + D.b.id +
				': heapattach --reach (or SIGUSR2 to heapattach) makes one.'));
			return;
		}
		var live = R.unreachable + R.reachable + R.unknown;
		add(sec, el('div', 'muted', 'At snapshot ' + R.snapshot + ' (' + R.reason + ', ' + fmtTime(R.time) + ')' +
			(R.snapshot !== D.b.id ? ', the latest scan up to snapshot ' + D.b.id : '') + ': ' +
			fmtBytes(R.unreachable) + ' of the sampled live heap unreachable (' +
			(live > 0 ? (100 * R.unreachable / live).toFixed(0) : '0') + '%: nothing points to it, a leak), ' +
			fmtBytes(R.reachable) + ' reachable, ' + fmtBytes(R.unknown) + ' unknown (freed since).  ' +
			'Held by: the root through which a block was first reached, and the heap blocks between.  The scan: ' +
			fmtCount(R.blocks) + ' sampled blocks, ' + fmtCount(R.chunks) + ' allocator blocks; the target paused ' +
			R.pause_ms.toFixed(2) + ' ms; ' + fmtBytes(R.bytes_scanned) + ' read in ' + R.duration_ms.toFixed(0) +
			' ms; the copy cost ' + fmtBytes(R.cow_bytes) + '.'));
		if (!R.rows.length) { add(sec, el('div', 'empty', 'no sampled live block at the scan')); return; }
		var cols = [['live', 1], ['unreachable', 1], ['reachable', 1], ['held by', 0], ['leaf function (click for the stack)', 0]];
		var n = rankTable(sec, 'hd-reach-table', cols, R.rows, all, function (tbody, tr, r, ncols) {
			var x = r[1];
			add(tr, el('td', 'n', fmtBytes(x[0] + x[2] + x[4])));
			add(tr, el('td', 'n' + (x[0] > 0 ? ' leaked' : ''), fmtBytes(x[0])));
			add(tr, el('td', 'n', fmtBytes(x[2])));
			add(tr, el('td', 'held', heldBy(x, 3)));
			leafCell(add(tr, el('td', 'fn')), r[2], r[0]);
			expandable(tbody, tr, ncols, r[2], r[3]);
		});
		if (n < R.rows.length) showAll(sec, R.rows.length + ' call paths', function () { reachSection(true); });
		if (R.count > R.rows.length)
			add(sec, el('div', 'more muted', (R.count - R.rows.length) + ' more call paths: heapdiff --reach -n 0 lists all'));
	}

	/* What a function's row suggests (heapdiff(1), Resident memory): a
	 * hint, for values that grew or are held; hp: its allocation paths
	 * (none: it touches what others allocated, memset say). */
	function reading(h, r, sw, hp) {
		var t = '';
		if (h > 0 && r < h / 4) t = 'allocated, mostly never touched';
		else if (r > 0 && h < r / 4) t = hp ? 'resident, no longer on the heap (freed into the allocator)' :
			'touches memory allocated on other call paths (or not by malloc)';
		else if (h > 0 && r > 0) t = 'touched and kept';
		if (sw > 0) t += (t ? '; ' : '') + 'partly swapped out';
		return t;
	}

	/* The functions' heap and mmap against their resident and swapped
	 * memory (heapdiff --heap-vs-rss), when the session has resident
	 * memory. */
	function heapVsRss(sec, all) {
		var rows = D.functions, diff = !!D.a;
		sec.textContent = '';
		add(sec, el('div', 'muted', 'Per function, every call path through it counted once: the ' +
			(diff ? 'change of its' : '') + ' live heap and mmap (what it allocated) next to its resident and swapped ' +
			'memory (the pages its call paths touched first), which are the same memory and never added to it.  ' +
			'Heap far above resident: allocated but never touched; about equal: touched and kept; resident above heap: ' +
			'no longer on the heap (freed into the allocator), or touched by a function that did not allocate it.'));
		if (!rows.length) { add(sec, el('div', 'empty', diff ? 'no function changed' : 'no live memory')); return; }
		var cols = [['heap+mmap', 1], ['resident', 1], ['swapped', 1], ['function', 0], ['reading', 0]];
		var n = rankTable(sec, 'hd-vs-table', cols, rows, all, function (tbody, tr, r) {
			[r.heap_mmap_bytes, r.resident_bytes, r.swapped_bytes].forEach(function (v) {
				add(tr, el('td', 'n', fmtBytes(v, diff)));
			});
			funcCell(add(tr, el('td', 'fn')), r);
			add(tr, el('td', 'muted', reading(r.heap_mmap_bytes, r.resident_bytes, r.swapped_bytes, r.paths[0])));
		});
		if (n < rows.length) showAll(sec, rows.length + ' functions', function () { heapVsRss(sec, true); });
	}

	/* ------------------------------------------------------------ page */

	header();
	chart();
	memoryChart();
	flame();
	var h2r = add(app, el('h2'));
	h2r.id = 'hd-rows-title';
	tableBox = add(app, el('section'));
	setView(S.view);
	/* A section of A -> B (or at B) under its title. */
	function abSection(title, h2id, id) {
		var h2 = add(app, el('h2', null, title + (D.a ? ', snapshot ' + D.a.id + ' \u2192 ' + D.b.id :
			', snapshot ' + D.b.id)));
		h2.id = h2id;
		var sec = add(app, el('section'));
		sec.id = id;
		return sec;
	}
	topFunctions(abSection('Top functions', 'hd-funcs-title', 'hd-top-funcs'), false);
	leaks();
	reachSection(false);
	if (RSS)
		heapVsRss(abSection('Heap and mmap against resident memory, by function', 'hd-vs-title', 'hd-vs'), false);
	var resizeTimer = null;
	window.addEventListener('resize', function () {
		clearTimeout(resizeTimer);
		resizeTimer = setTimeout(render, 100);
	});
	document.documentElement.setAttribute('data-rendered', (performance.now() - T0).toFixed(1));
})();
