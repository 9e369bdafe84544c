"""The import graph of a crate, module by module (one node per file), and its cycles: CI runs
it on `src/`, `host-test/src/` and `host-test/sandbox/src/` and fails on any cycle.

Usage: python3 host-test/tests/import_cycles.py <crate src dir>...

Module-level (file-level) import graph of a crate's src dir; prints strongly connected
components. A reference `crate::a::b::X` resolves to the deepest module file a/b(.rs|/mod.rs)
that exists; `super::` and `self::` are resolved relative to the file's module. Inline
`#[cfg(test)] mod tests {}` blocks and files under a `tests` module are left out."""
import os,re,sys,collections

def check(root):
    files={}
    for dp,_,fs in os.walk(root):
        for f in fs:
            if not f.endswith('.rs'): continue
            p=os.path.join(dp,f); rel=os.path.relpath(p,root)[:-3]
            parts=rel.split(os.sep)
            if parts[-1] in ('mod','lib','main'): parts=parts[:-1]
            if 'tests' in parts or 'proptests' in parts or (parts and parts[-1].endswith('tests')): continue
            files[tuple(parts)]=p
    def resolve(path):
        # longest prefix that is a module
        for n in range(len(path),-1,-1):
            if tuple(path[:n]) in files: return tuple(path[:n])
        return None
    graph=collections.defaultdict(set)
    for mod,p in files.items():
        src=open(p).read()
        # Leave out test-only code: every `#[cfg(test)]` module (brace-matched) and item line.
        out=[];i=0
        for m in re.finditer(r'#\[cfg\(test\)\]',src):
            if m.start()<i: continue
            out.append(src[i:m.start()])
            j=m.end()
            rest=src[j:]
            mm=re.match(r'\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+\w+\s*;',rest)
            if mm: i=j+mm.end(); continue
            mm=re.match(r'\s*(?:pub(?:\([\w:]+\))?\s+)?mod\s+\w+\s*\{',rest)
            if mm:
                k=j+mm.end(); depth=1
                while depth and k<len(src):
                    if src[k]=='{': depth+=1
                    elif src[k]=='}': depth-=1
                    k+=1
                i=k; continue
            # an attribute on one field or item: skip to the end of its line's item (next , or ;)
            e=re.search(r'[,;]\n',src[j:])
            i=j+(e.end() if e else 0)
        out.append(src[i:])
        src=''.join(out)
        # expand use groups: crate::a::{b, c::d}
        for m in re.finditer(r'\b(crate|super|self)((?:::\w+)+)(::\{([^}]*)\})?',src):
            base=m.group(1); segs=[s for s in m.group(2).split('::') if s]
            if base=='crate': start=[]
            elif base=='self': start=list(mod) if (files[mod].endswith('mod.rs') or files[mod].endswith('lib.rs')) else list(mod)
            else:
                start=list(mod)[:-1]
                while segs and segs[0]=='super': segs=segs[1:]; start=start[:-1]
            targets=[start+segs]
            if m.group(4):
                for item in m.group(4).split(','):
                    item=item.strip().split(' as ')[0]
                    if item and item!='self': targets.append(start+segs+[s for s in item.split('::') if s])
            for t in targets:
                r=resolve(t)
                if r is not None and r!=mod and not (mod[:len(r)]==r):  # ignore references to own ancestors? keep
                    graph[mod].add(r)
                elif r is not None and r!=mod:
                    graph[mod].add(r)
    idx={};low={};st=[];on=set();res=[];c=[0]
    sys.setrecursionlimit(10000)
    def sc(v):
        idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
        for w in graph.get(v,()):
            if w not in idx: sc(w);low[v]=min(low[v],low[w])
            elif w in on: low[v]=min(low[v],idx[w])
        if low[v]==idx[v]:
            comp=[]
            while True:
                w=st.pop();on.discard(w);comp.append(w)
                if w==v:break
            if len(comp)>1: res.append(comp)
    for v in list(files):
        if v not in idx: sc(v)
    name=lambda m:'::'.join(m) or 'crate'
    for comp in res:
        print("CYCLE:",sorted(name(x) for x in comp))
        for a in sorted(comp):
            print("   ",name(a),"->",sorted(name(x) for x in graph[a] if x in comp))
    print(len(files),"modules,",len(res),"cycles")
    return len(res)


if __name__ == "__main__":
    total = 0
    for root in sys.argv[1:]:
        print(f"{root}:")
        total += check(root)
    sys.exit(1 if total else 0)
