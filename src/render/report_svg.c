/* report_svg.c -- an interactive flame graph, written by heapdiff itself
 * (no perl, no network): one self-contained SVG file with inline
 * JavaScript, opened in any browser.
 *
 * Layout: callstacks are merged into a tree from the root (the outermost
 * frame, at the bottom) to the leaves, frames by name (a Python frame's
 * with its file and line, hd_frame_label); a node's width is the bytes of
 * the rows through it.  In a diff a node's width is the growth plus the
 * shrinkage through it (|change|), and its colour says which dominates:
 * warm (red/orange) for growth, blue for shrinkage, purple for a mix, so
 * that memory given back is never mistaken for memory gained.
 *
 * Interaction: click a frame to zoom into it (its ancestors stay, dimmed),
 * click the background or "Reset zoom" to go back; "Search" highlights the
 * frames matching a regular expression and shows their share; hovering
 * shows the frame, its bytes and objects (a <title> tooltip and the
 * details line at the bottom). */
#define _GNU_SOURCE
#include "render.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 1200.0
#define XPAD 10.0
#define FRAME_H 16
#define TOP 54
#define BOTTOM 34
#define FONT 12
#define CHAR_W (FONT * 0.59)

struct node {
	char *name;
	double grow, shrink;       /* bytes gained / given back through here */
	double grow_n, shrink_n;   /* objects */
	struct node *child, *next;
};

static struct node *node_new(const char *name)
{
	struct node *n = hd_xmalloc(sizeof *n);
	memset(n, 0, sizeof *n);
	n->name = hd_xstrdup(name);
	return n;
}

static struct node *child_of(struct node *parent, const char *name)
{
	struct node **pp = &parent->child;
	for (; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->name, name) == 0)
			return *pp;
	return *pp = node_new(name);
}

static void node_free(struct node *n)
{
	while (n) {
		struct node *next = n->next;
		node_free(n->child);
		free(n->name);
		free(n);
		n = next;
	}
}

static void add(struct node *n, double bytes, double objects)
{
	if (bytes >= 0) {
		n->grow += bytes;
		n->grow_n += objects;
	} else {
		n->shrink -= bytes;
		n->shrink_n -= objects;
	}
}

static int depth_of(const struct node *n)
{
	int d = 0;
	for (const struct node *c = n->child; c; c = c->next) {
		int x = depth_of(c);
		if (x > d)
			d = x;
	}
	return d + 1;
}

/* Children sorted by name, as flamegraph.pl does: the same stacks land in
 * the same place in two graphs. */
static int cmp_node(const void *a, const void *b)
{
	return strcmp((*(struct node *const *)a)->name, (*(struct node *const *)b)->name);
}

static void fill_color(char *buf, size_t len, const struct node *n, int depth)
{
	double w = n->grow + n->shrink;
	double neg = w > 0 ? n->shrink / w : 0;
	unsigned h = 2166136261u;
	for (const char *s = n->name; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	double v = (double)(h % 1000) / 1000.0;
	if (depth == 0) {
		snprintf(buf, len, "rgb(200,200,200)");
	} else if (neg < 0.05) {         /* growth: flame colours */
		snprintf(buf, len, "rgb(%d,%d,%d)", 205 + (int)(50 * v), (int)(80 + 130 * v),
		         (int)(40 * v));
	} else if (neg > 0.95) {         /* shrinkage: blue */
		snprintf(buf, len, "rgb(%d,%d,%d)", (int)(40 + 60 * v), (int)(110 + 70 * v),
		         225 + (int)(30 * v));
	} else {                         /* both: purple */
		snprintf(buf, len, "rgb(%d,%d,%d)", 160 + (int)(40 * (1 - neg)), (int)(80 + 40 * v),
		         190 + (int)(40 * neg));
	}
}

struct layout {
	FILE *f;
	double total;              /* width of the root, bytes */
	int height, diff, exact;
	const char *objects;       /* what the counts count */
};

static void emit(struct layout *L, struct node *n, double x, int depth)
{
	char color[64], b1[64], b2[64], c1[64], c2[64];
	double w = n->grow + n->shrink;
	double fx = L->total > 0 ? x / L->total : 0, fw = L->total > 0 ? w / L->total : 0;
	double px = XPAD + fx * (WIDTH - 2 * XPAD), pw = fw * (WIDTH - 2 * XPAD);
	double y = L->height - BOTTOM - (depth + 1) * FRAME_H;
	size_t nc = 0, k = 0;

	fill_color(color, sizeof color, n, depth);
	fprintf(L->f, "<g class=\"f\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%d\"><title>", fx, fw,
	        depth);
	hd_xml_str(L->f, n->name);
	if (L->diff)
		fprintf(L->f, " (%s, %s %s; grew %s, shrank %s)",
		        hd_fmt_bytes(b1, sizeof b1, n->grow - n->shrink, 1, L->exact),
		        hd_fmt_count(c1, sizeof c1, n->grow_n - n->shrink_n, 1), L->objects,
		        hd_fmt_bytes(b2, sizeof b2, n->grow, 0, L->exact),
		        hd_fmt_bytes(c2, sizeof c2, n->shrink, 0, L->exact));
	else
		fprintf(L->f, " (%s, %s %s, %.2f%%)", hd_fmt_bytes(b1, sizeof b1, w, 0, L->exact),
		        hd_fmt_count(c1, sizeof c1, n->grow_n, 0), L->objects, 100 * fw);
	fprintf(L->f, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
	        "rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
	        px, y, pw, FRAME_H - 1, color, px + 3, y + FRAME_H - 4.5);
	/* The label as far as it fits; the script redoes this on zoom. */
	size_t fit = pw > 3 * CHAR_W ? (size_t)((pw - 6) / CHAR_W) : 0, len = strlen(n->name);
	if (fit >= len) {
		hd_xml_str(L->f, n->name);
	} else if (fit > 2) {
		char *t = hd_xstrdup(n->name);
		size_t cut = fit - 2;
		while (cut > 0 && ((unsigned char)t[cut] & 0xc0) == 0x80)
			cut--; /* never cut a UTF-8 sequence */
		strcpy(t + cut, "..");
		hd_xml_str(L->f, t);
		free(t);
	}
	fputs("</text></g>\n", L->f);

	for (struct node *c = n->child; c; c = c->next)
		nc++;
	if (!nc)
		return;
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
	struct node **v = hd_xmalloc(nc * sizeof *v);
	for (struct node *c = n->child; c; c = c->next)
		v[k++] = c;
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
	qsort(v, nc, sizeof *v, cmp_node);
	for (k = 0; k < nc; k++) {
		emit(L, v[k], x, depth + 1);
		x += v[k]->grow + v[k]->shrink;
	}
	free(v);
}

/* The script: plain ES5, no external resources. */
static const char script[] =
	"var W=%.1f,XP=%.1f,CW=%.3f,svg=document.documentElement,fr=[],zoomed=null;\n"
	"function A(g,k){return parseFloat(g.getAttribute('data-'+k));}\n"
	"function label(g,pw){var t=g.getElementsByTagName('title')[0].textContent;"
	"var name=t.substring(0,t.lastIndexOf(' ('));var n=Math.floor((pw-6)/CW);"
	"g.getElementsByTagName('text')[0].textContent=n>=name.length?name:(n>2?name.substring(0,n-2)+'..':'');}\n"
	"function place(g,x0,w0,d0){var x=A(g,'x'),w=A(g,'w'),d=A(g,'d'),r=g.getElementsByTagName('rect')[0],"
	"t=g.getElementsByTagName('text')[0];var anc=d<d0&&x<=x0+1e-12&&x+w>=x0+w0-1e-12;"
	"var inside=d>=d0&&x>=x0-1e-12&&x+w<=x0+w0+1e-12;"
	"if(!anc&&!inside){g.style.display='none';return;}g.style.display='';"
	"var px,pw;if(anc){px=XP;pw=W-2*XP;g.style.opacity='0.6';}else{px=XP+(x-x0)/w0*(W-2*XP);"
	"pw=w/w0*(W-2*XP);g.style.opacity='';}r.setAttribute('x',px.toFixed(2));"
	"r.setAttribute('width',pw.toFixed(2));t.setAttribute('x',(px+3).toFixed(2));label(g,pw);}\n"
	"function zoom(g){zoomed=g;var x0=g?A(g,'x'):0,w0=g?A(g,'w'):1,d0=g?A(g,'d'):0;"
	"if(w0<=0)return;for(var i=0;i<fr.length;i++)place(fr[i],x0,w0,d0);"
	"document.getElementById('unzoom').style.display=g?'':'none';}\n"
	"function details(s){document.getElementById('details').textContent=s;}\n"
	"function search(){var re=prompt('Search (regular expression):','');if(re===null)return;"
	"var rx;try{rx=new RegExp(re);}catch(e){details('bad regular expression: '+e.message);return;}"
	"var sum=0,ends=[];for(var i=0;i<fr.length;i++){var g=fr[i],"
	"t=g.getElementsByTagName('title')[0].textContent,name=t.substring(0,t.lastIndexOf(' ('));"
	"var r=g.getElementsByTagName('rect')[0];if(!r.hasAttribute('data-fill'))"
	"r.setAttribute('data-fill',r.getAttribute('fill'));"
	"if(re!==''&&rx.test(name)){r.setAttribute('fill','rgb(230,0,230)');var x=A(g,'x'),w=A(g,'w'),"
	"covered=false;for(var j=0;j<ends.length;j++)if(x>=ends[j][0]-1e-12&&x+w<=ends[j][1]+1e-12)covered=true;"
	"if(!covered){ends.push([x,x+w]);sum+=w;}}else r.setAttribute('fill',r.getAttribute('data-fill'));}"
	"document.getElementById('matched').textContent=re===''?'':'Matched: '+(100*sum).toFixed(2)+'%%';}\n"
	"window.addEventListener('load',function(){var gs=document.getElementsByTagName('g');"
	"for(var i=0;i<gs.length;i++)if(gs[i].getAttribute('class')==='f')fr.push(gs[i]);"
	"for(var i=0;i<fr.length;i++){(function(g){g.addEventListener('click',function(e){zoom(g);"
	"e.stopPropagation();});g.addEventListener('mouseover',function(){"
	"details(g.getElementsByTagName('title')[0].textContent);});"
	"g.addEventListener('mouseout',function(){details(' ');});})(fr[i]);}"
	"document.getElementById('bg').addEventListener('click',function(){zoom(null);});"
	"document.getElementById('unzoom').addEventListener('click',function(){zoom(null);});"
	"document.getElementById('search').addEventListener('click',search);});\n";

void hd_write_svg(FILE *f, const struct hd_report *r)
{
	struct node *root = node_new("all");
	struct layout L = { .f = f, .diff = r->a != NULL, .exact = r->exact_bytes,
	                    .objects = hd_kind_objects(r->kind) };
	int physical = hd_kind_physical(r->kind);
	char b1[64], t1[64];
	char label[HD_LABEL_MAX], name[HD_LABEL_MAX + 16];

	for (size_t i = 0; i < r->n; i++) {
		const struct hd_row *row = &r->rows[i];
		struct node *n = root;
		add(n, row->bytes, row->objects);
		if (row->kind != 0) {
			char k[32];
			snprintf(k, sizeof k, "[%s]", hd_kind_name(row->kind));
			n = child_of(n, k);
			add(n, row->bytes, row->objects);
		}
		for (int k = row->st.n - 1; k >= 0; k--) {
			const struct hd_frame *fr = row->st.f[k];
			snprintf(name, sizeof name, "%s%s", hd_frame_label(fr, label, sizeof label),
			         fr->inlined ? " (inlined)" : "");
			n = child_of(n, name);
			add(n, row->bytes, row->objects);
		}
	}
	L.total = root->grow + root->shrink;
	L.height = TOP + BOTTOM + depth_of(root) * FRAME_H;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
	        "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%d\" "
	        "viewBox=\"0 0 %.0f %d\">\n", WIDTH, L.height, WIDTH, L.height);
	fputs("<style type=\"text/css\">\n"
	      "text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
	      "g.f text { pointer-events: none; }\n"
	      "g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; cursor: pointer; }\n"
	      ".ui { cursor: pointer; fill: rgb(40,40,160); }\n"
	      "</style>\n<script type=\"text/ecmascript\"><![CDATA[\n", f);
	fprintf(f, script, WIDTH, XPAD, CHAR_W);
	fputs("]]></script>\n", f);
	fprintf(f, "<rect id=\"bg\" x=\"0\" y=\"0\" width=\"%.0f\" height=\"%d\" fill=\"rgb(250,250,245)\"/>\n",
	        WIDTH, L.height);
	fprintf(f, "<text x=\"%.0f\" y=\"22\" text-anchor=\"middle\" style=\"font-size:16px\">", WIDTH / 2);
	if (r->a)
		fprintf(f, "heapdiff: %s growth from snapshot %" PRId64 " to %" PRId64 " (%s)",
		        hd_kind_title(r->kind), r->a->id, r->b->id,
		        hd_fmt_bytes(b1, sizeof b1, r->total_bytes, 1, r->exact_bytes));
	else
		fprintf(f, "heapdiff: %s at snapshot %" PRId64 " (%s, %s)", hd_kind_title(r->kind), r->b->id,
		        hd_fmt_bytes(b1, sizeof b1, r->total_bytes, 0, r->exact_bytes),
		        hd_fmt_time(t1, sizeof t1, r->b->time));
	fputs("</text>\n<text x=\"10\" y=\"42\">", f);
	hd_xml_str(f, r->b->src->path);
	if (r->a)
		fputs(" \xe2\x80\x94 width: bytes changed; warm: grew, blue: shrank, purple: both", f);
	else if (physical)
		fprintf(f, " \xe2\x80\x94 width: bytes of %s", hd_kind_what(r->kind));
	else
		fputs(" \xe2\x80\x94 width: live bytes", f);
	fprintf(f, "</text>\n<text id=\"unzoom\" class=\"ui\" x=\"%.0f\" y=\"42\" style=\"display:none\">"
	        "Reset zoom</text>\n<text id=\"search\" class=\"ui\" x=\"%.0f\" y=\"42\" "
	        "text-anchor=\"end\">Search</text>\n<text id=\"matched\" x=\"%.0f\" y=\"%d\" "
	        "text-anchor=\"end\"> </text>\n<text id=\"details\" x=\"10\" y=\"%d\"> </text>\n",
	        WIDTH - 160, WIDTH - 10, WIDTH - 10, L.height - 12, L.height - 12);
	if (L.total > 0)
		emit(&L, root, 0, 0);
	else
		fprintf(f, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\">%s%s</text>\n", WIDTH / 2,
		        L.height / 2, r->a ? "no callstack changed" : physical ? "no " : "no live allocations",
		        !r->a && physical ? hd_kind_what(r->kind) : "");
	fputs("</svg>\n", f);
	node_free(root);
}
