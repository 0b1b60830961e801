/* SPDX-License-Identifier: MIT */
/*
 * flamehtml.c - the interactive flame graph: one self-contained HTML page (inline CSS and
 * script, no network), see flamehtml.h.
 *
 * The page embeds the collapsed stacks of the profile (sp_export_collapsed: the same paths
 * and weights as `sampo export --collapsed`, time-weighted for sampled profiles) as JSON and
 * builds the tree in the browser.  In the differential mode it embeds both profiles'
 * stacks: widths are the new profile's, colours the change of each frame's share of the
 * total (red grew, blue shrank, as difffolded.pl + flamegraph.pl draw it).
 */
#include "flamehtml.h"

#include <string.h>

#include "export.h"

/* Appends the collapsed lines of p as a JSON array of [path, weight] pairs. */
static int fh_stacks(SpProfile *p, SpBuf *out) {
    SpBuf c;
    sp_buf_init(&c);
    int rc = sp_export_collapsed(p, &c);
    sp_buf_u8(&c, 0);
    if (rc || c.oom) {
        sp_buf_fini(&c);
        return -1;
    }
    sp_buf_u8(out, '[');
    const char *s = (const char *)c.data;
    int first = 1;
    while (*s) {
        const char *nl = strchr(s, '\n');
        const char *sp = nl;
        while (sp > s && sp[-1] != ' ')
            sp--;
        if (!nl || sp <= s) break;
        SpBuf path;
        sp_buf_init(&path);
        sp_buf_put(&path, s, (size_t)(sp - 1 - s));
        sp_buf_u8(&path, 0);
        sp_buf_printf(out, "%s[", first ? "" : ",");
        sp_json_string(out, path.oom ? "" : (const char *)path.data);
        sp_buf_u8(out, ',');
        sp_buf_put(out, sp, (size_t)(nl - sp));
        sp_buf_u8(out, ']');
        if (path.oom) out->oom = 1;
        sp_buf_fini(&path);
        first = 0;
        s = nl + 1;
    }
    sp_buf_u8(out, ']');
    sp_buf_fini(&c);
    return out->oom ? -1 : 0;
}

static const char fh_unit_ns[] = "ns", fh_unit_calls[] = "calls";

static const char *fh_unit(const SpProfile *p) {
    return sp_weight_unit(p) == SP_UNIT_CALLS ? fh_unit_calls : fh_unit_ns;
}

/* The page: style, layout, then the script (the data is one JSON object, SAMPO_FLAME). */
static const char fh_head[] = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                              "<meta name=\"generator\" content=\"sampo flame --html\">\n<title>";

static const char fh_style[] =
    "</title>\n<style>\n"
    "body{margin:0;font:12px Verdana,sans-serif;background:#f8f8f0;color:#000}\n"
    "#bar{padding:6px 10px;display:flex;gap:8px;align-items:center;flex-wrap:wrap}\n"
    "#bar h1{font-size:16px;margin:0 12px 0 0}\n"
    "#graph{position:relative;margin:0 10px;overflow:hidden}\n"
    ".f{position:absolute;height:15px;line-height:15px;overflow:hidden;white-space:nowrap;"
    "box-sizing:border-box;border:1px solid #f8f8f0;border-radius:2px;padding-left:3px;"
    "cursor:pointer}\n"
    ".f:hover{border-color:#000}\n"
    ".f.match{background:#e040e0 !important}\n"
    ".f.dim{opacity:.45}\n"
    "#details{padding:6px 10px;min-height:16px;font-family:monospace;white-space:pre-wrap;"
    "word-break:break-all}\n"
    "#matched{font-weight:bold}\n"
    "</style></head><body>\n"
    "<div id=\"bar\"><h1 id=\"title\"></h1>"
    "<button id=\"reset\" type=\"button\">Reset zoom</button>"
    "<input id=\"search\" type=\"search\" placeholder=\"search (regular expression)\" size=\"30\">"
    "<span id=\"matched\"></span><span id=\"legend\"></span></div>\n"
    "<div id=\"details\">&nbsp;</div>\n<div id=\"graph\"></div>\n<script>\n"
    "const SAMPO_FLAME=";

/* Plain ES2017, no libraries: build the tree, lay it out for the zoomed root, redraw. */
static const char fh_script[] =
    ";\n"
    "(function(){\n"
    "'use strict';\n"
    "const D=SAMPO_FLAME,ROW=16,unesc=s=>s.replace(/%(3B|0A|0D|25)/g,(m,h)=>"
    "String.fromCharCode(parseInt(h,16)));\n"
    "function node(name,parent){return{name:name,parent:parent,kids:new Map(),v:0,b:0,"
    "self:0}}\n"
    "const root=node('all',null);\n"
    "function add(stacks,key){for(const [path,w] of stacks){let n=root;n[key]+=w;"
    "for(const f of path.split(';')){const nm=unesc(f);let k=n.kids.get(nm);"
    "if(!k){k=node(nm,n);n.kids.set(nm,k)}k[key]+=w;n=k}if(key==='v')n.self+=w}}\n"
    "add(D.stacks,'v');const diff=!!D.base;if(diff)add(D.base,'b');\n"
    "const total=root.v||1,btotal=root.b||1;\n"
    "document.getElementById('title').textContent=D.title;\n"
    "document.title=D.title;\n"
    "const G=document.getElementById('graph'),det=document.getElementById('details');\n"
    "const fmt=v=>D.unit==='ns'?(v>=1e9?(v/1e9).toFixed(3)+' s':(v/1e6).toFixed(3)+' ms')"
    ":String(v)+' '+D.unit;\n"
    "const pct=(v,t)=>(100*v/t).toFixed(2)+'%';\n"
    "function hue(s){let h=0;for(let i=0;i<s.length;i++)h=(h*31+s.charCodeAt(i))>>>0;"
    "return h}\n"
    "function color(n){if(diff){const d=n.v/total-n.b/btotal;const m=Math.max(n.v/total,"
    "n.b/btotal)||1;const r=Math.min(1,Math.abs(d)/m);const c=Math.round(255*(1-r));"
    "return d>0?'rgb(255,'+c+','+c+')':d<0?'rgb('+c+','+c+',255)':'rgb(255,255,255)'}"
    "const h=hue(n.name);return 'rgb('+(205+h%50)+','+(80+(h>>8)%150)+','+((h>>16)%55)+')'}\n"
    "let zoom=root,rx=null;\n"
    "function sorted(n){return [...n.kids.values()].sort((a,b)=>a.name<b.name?-1:"
    "a.name>b.name?1:0)}\n"
    "function depth(n){let d=0;for(let p=n;p!==root;p=p.parent)d++;return d}\n"
    "function matches(n){return rx&&rx.test(n.name)}\n"
    "function draw(){G.textContent='';const W=G.clientWidth||1000;const rows=[];"
    "const zd=depth(zoom);let maxd=0;"
    "const put=(n,x,w,d)=>{if(w<0.5)return;rows.push([n,x,w,d]);if(d>maxd)maxd=d;"
    "let cx=x;for(const k of sorted(n)){const kw=w*k.v/(n.v||1);put(k,cx,kw,d+1);cx+=kw}};\n"
    "for(let p=zoom.parent,d=zd-1;p;p=p.parent,d--)rows.push([p,0,W,d]);\n"
    "put(zoom,0,W,zd);G.style.height=((maxd+1)*ROW+4)+'px';const frag="
    "document.createDocumentFragment();\n"
    "for(const [n,x,w,d] of rows){const e=document.createElement('div');e.className='f'+"
    "(matches(n)?' match':'')+(d<zd?' dim':'');e.style.left=x+'px';e.style.width=w+'px';"
    "e.style.top=((maxd-d)*ROW)+'px';e.style.background=color(n);"
    "e.textContent=w>30?n.name:'';e.dataset.name=n.name;e.title=n.name;"
    "e.onmouseenter=()=>show(n);e.onclick=()=>{zoom=n;draw()};frag.appendChild(e)}\n"
    "G.appendChild(frag);}\n"
    "function show(n){let s=n.name+'\\n'+fmt(n.v)+' ('+pct(n.v,total)+' of all, '+"
    "pct(n.v,zoom.v||1)+' of the zoomed frame), self '+fmt(n.self);"
    "if(diff)s+='\\nbase: '+fmt(n.b)+' ('+pct(n.b,btotal)+'), change of share: '+"
    "((100*(n.v/total-n.b/btotal)).toFixed(2))+' points';det.textContent=s}\n"
    "function matchedShare(){if(!rx)return null;let m=0;const walk=n=>{if(n!==root&&"
    "matches(n)){m+=n.v;return}for(const k of n.kids.values())walk(k)};walk(root);"
    "return m}\n"
    "document.getElementById('reset').onclick=()=>{zoom=root;draw()};\n"
    "document.getElementById('search').oninput=e=>{const t=e.target.value;"
    "try{rx=t?new RegExp(t):null}catch(err){rx=null}const m=matchedShare();"
    "document.getElementById('matched').textContent=m===null?'':'Matched: '+pct(m,total);"
    "draw()};\n"
    "document.getElementById('legend').textContent=diff?'width: new profile; red: share "
    "grew, blue: share shrank (base '+fmt(root.b)+', new '+fmt(root.v)+')':'total '+"
    "fmt(root.v);\n"
    "window.addEventListener('resize',draw);draw();show(root);\n"
    "})();\n"
    "</script></body></html>\n";

int sp_flame_html(SpProfile *p, SpProfile *base, const SpFlameOpts *o, SpBuf *out) {
    SpBuf d;
    sp_buf_init(&d);
    sp_buf_printf(&d, "{\"title\":");
    sp_json_string(&d, o->title);
    sp_buf_printf(&d, ",\"unit\":\"%s\",\"stacks\":", fh_unit(p));
    int rc = fh_stacks(p, &d);
    if (!rc && base) {
        sp_buf_printf(&d, ",\"base\":");
        rc = fh_stacks(base, &d);
    }
    sp_buf_u8(&d, '}');
    if (rc || d.oom) {
        sp_buf_fini(&d);
        return -1;
    }
    sp_buf_put(out, fh_head, sizeof fh_head - 1);
    sp_xml_text(out, o->title);
    sp_buf_put(out, fh_style, sizeof fh_style - 1);
    /* '<' only occurs inside JSON strings: as \u003c no name can close the <script> */
    for (size_t i = 0; i < d.len; i++) {
        if (d.data[i] == '<')
            sp_buf_put(out, "\\u003c", 6);
        else
            sp_buf_u8(out, d.data[i]);
    }
    sp_buf_fini(&d);
    sp_buf_put(out, fh_script, sizeof fh_script - 1);
    return out->oom ? -1 : 0;
}
