"""The naive 32x32 kernel's steady loop (sm_90 SASS, NVRTC on a CPU) traced as tools.compiler_facts.warp_trace does, three ways: every
global load at the median DRAM latency (690 cycles), each at a latency drawn from the dram_fetch microbenchmark's
measured distribution (experiments/results/h200/dram_fetch-2026-12-01.json, sectors 0 and 2: 6,144 DRAM reads), and from
that distribution without its tail above 1,000 cycles; also with the scoreboard barriers of the control codes. Run from
the repository root: python3 experiments/results/h200/logs/naive-2026-12-01/latency_spread_trace.py"""
import sys; sys.path.insert(0,'/work/main')
import os, tempfile, re
import tools.compiler_facts as cf
from tools.compiler_facts import compile_cubin, _run, find_main_loop, basic_blocks, warp_trace
import model.registry as reg
cfg = [c for c in reg.classic_configs([1]) if dict(c.params)['BX']==32 and dict(c.params)['COALESCED']==1][0]
with tempfile.TemporaryDirectory() as td:
    p=os.path.join(td,'k.cubin'); open(p,'wb').write(compile_cubin(cfg,'sm_90'))
    txt=_run("nvdisasm","-c","-hex",p)
# parse with control words
lines=txt.splitlines()
ctrl=[]
for i,l in enumerate(lines):
    m=cf._HEX_HI.match(l)
    if m: ctrl.append(int(m.group(1),16))
funcs=cf.parse_nvdisasm(txt)
(ins,lab),=funcs.values()
assert len(ctrl)==len(ins), (len(ctrl),len(ins))
def dec(h):
    return dict(stall=(h>>41)&15, yld=(h>>45)&1, wb=(h>>46)&7, rb=(h>>49)&7, wait=(h>>52)&63, reuse=(h>>58)&15)
path,hdr=find_main_loop(ins,lab)
for i in path[:40]:
    d=dec(ctrl[i]); print(f"{ins[i].op:16s} {ins[i].operands[:30]:30s} st{d['stall']} wb{d['wb']} rb{d['rb']} wait{d['wait']:06b}")

def trace_sb(instrs, ctl, L, Ls=30, repeat=4, read_lat=4):
    ready={}; sb=[0.0]*6; t=0.0; ends=[]; waits=[]
    ops=cf._prepared(tuple(instrs))
    lat={"global":L,"shared":Ls,"local":L,"const":cf.CONST_LATENCY_CYCLES,"alu":cf.ALU_LATENCY_CYCLES}
    for rep in range(repeat):
        for j,((ins,(dest,srcs),cls,base),h) in enumerate(zip(ops,ctl)):
            d=dec(h); start=t
            for r in srcs: start=max(start, ready.get(r,0.0))
            for k in range(6):
                if d['wait']>>k &1: start=max(start, sb[k])
            if rep==2 and start>t+1: waits.append((j, start-t))
            if d['wb']<6: sb[d['wb']]=max(sb[d['wb']], start+lat[cls])
            if d['rb']<6: sb[d['rb']]=max(sb[d['rb']], start+read_lat)
            t=start+ins.stall
            for r in dest: ready[r]=start+lat[cls]
        ends.append(t)
    return ends, waits
pins=[ins[i] for i in path]; pctl=[ctrl[i] for i in path]
for L in (287, 690, 800):
    e,w=trace_sb(pins,pctl,L)
    reg=warp_trace(pins,L,30,repeat=4)['ends']
    print(L, 'sb-trace per iter', (e[3]-e[1])/2, ' reg-trace', (reg[3]-reg[1])/2, 'waits', [(j,round(x)) for j,x in w])

import json, numpy as np
dd=json.load(open('/work/main/experiments/results/h200/dram_fetch-2026-12-01.json'))
samp=np.concatenate([np.array(r['cycles_raw']).reshape(-1,4)[:,[0,2]].ravel() for r in dd['rows']])
rng=np.random.default_rng(0)
def trace_rand(instrs, draw, repeat=6):
    ready={}; t=0.0; ends=[]
    ops=cf._prepared(tuple(instrs))
    for rep in range(repeat):
        for (ins,(dest,srcs),cls,base) in ops:
            start=t
            for r in srcs: start=max(start, ready.get(r,0.0))
            t=start+ins.stall
            l = draw() if cls=="global" else (30 if cls=="shared" else (cf.CONST_LATENCY_CYCLES if cls=="const" else cf.ALU_LATENCY_CYCLES))
            for r in dest: ready[r]=start+l
        ends.append(t)
    return (ends[-1]-ends[1])/(repeat-2)
for name, draw in [("median690", lambda: 690.0), ("empirical", lambda: float(rng.choice(samp))), ("trim<1000", lambda: float(rng.choice(samp[samp<1000])))]:
    v=[trace_rand(pins, draw) for _ in range(200)]
    print(name, np.mean(v).round(), np.percentile(v,[10,90]).round())
