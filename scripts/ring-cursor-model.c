/* A C model of the ring cursors (BENCHMARKS.md, ring section, "the cursors' line layout"):
 * one producer and one consumer thread (pinned to CPUs 0 and 1) move stereo Float32 chunks through
 * two 64 KiB channels under several cursor layouts, and through JACK's jack_ringbuffer_t, in rotating order.
 *   gcc -O2 -o /tmp/ring-cursor-model scripts/ring-cursor-model.c -ljack -lpthread
 *   /tmp/ring-cursor-model CHUNK_FRAMES TRIALS [PREFETCH 0|1] [PAUSES]
 * Variants: 0 positions on own 128-byte pairs, cached copy on the same line (RingCursors now);
 * 1 and 2 no cached copy (own lines / one shared line); 3 cached copy, one shared line;
 * 4 the cached copy on the second line of the pair (RingCursors before); 9 JACK.
 * Caveats (BENCHMARKS.md, ring section, "2026-11-28 late"): JACK's buffer here comes from
 * jack_ringbuffer_create's malloc of 128 KiB, i.e. an mmap 16 bytes past a page, so its 256-byte chunks
 * straddle five lines, where the bench's comes from the heap on a line boundary. And with PAUSES = 1 the
 * 32-frame result ranks the two loops' instruction timing, not the cursors: this model and the bench give
 * opposite orders there, and a C copy of JACK's ring runs 20-30 % below libjack's in the bench's loop.
 * Compare designs at PAUSES = 16 (the bench's back-off since then), where the two harnesses agree. */
#define _GNU_SOURCE
#include <jack/ringbuffer.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define RF 16384
#define CH 2
static int CHUNK=32; static long TOTAL=(32L<<20)/8;
static int VARIANT=0; static int PF=0; // 0 sonora (cached, separate lines), 1 no cache separate lines, 2 same line no cache, 3 cached + same line
typedef struct { _Alignas(128) _Atomic long w; long cr; char pad1[128-16]; _Atomic long r; long cw; char pad2[128-16]; } Cur;
typedef struct { _Alignas(128) _Atomic long w; char p0[56]; long cr; char p1[56]; _Atomic long r; char p2[56]; long cw; char p3[56]; } CurS;
static CurS curS;
typedef struct { _Alignas(64) _Atomic long w; _Atomic long r; long cr; long cw; } Cur1;
static Cur cur; static Cur1 cur1;
static float *chan[CH];
static float *src[CH], *dst[CH];
static jack_ringbuffer_t *jr; static char *jsrc,*jdst;
static atomic_int go;
static int NP=1; static inline void relax(void){for(int i=0;i<NP;i++)__builtin_ia32_pause();}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static inline long wpos(void){return VARIANT>=2?atomic_load_explicit(&cur1.w,memory_order_relaxed):atomic_load_explicit(&cur.w,memory_order_relaxed);}
static void *prod(void*a){pin(0);while(!atomic_load(&go));long n=TOTAL/CHUNK;
 if(VARIANT==9){for(long i=0;i<n;i++){while(jack_ringbuffer_write_space(jr)<(size_t)CHUNK*8)relax();jack_ringbuffer_write(jr,jsrc,CHUNK*8);}return 0;}
 for(long i=0;i<n;i++){
  long p, freeS;
  for(;;){
   if(VARIANT==0){p=atomic_load_explicit(&cur.w,memory_order_relaxed);freeS=RF-(p-cur.cr);if(freeS<CHUNK){cur.cr=atomic_load_explicit(&cur.r,memory_order_acquire);freeS=RF-(p-cur.cr);}}
   else if(VARIANT==1){p=atomic_load_explicit(&cur.w,memory_order_relaxed);freeS=RF-(p-atomic_load_explicit(&cur.r,memory_order_acquire));}
   else if(VARIANT==2){p=atomic_load_explicit(&cur1.w,memory_order_relaxed);freeS=RF-(p-atomic_load_explicit(&cur1.r,memory_order_acquire));}
   else if(VARIANT==4){p=atomic_load_explicit(&curS.w,memory_order_relaxed);freeS=RF-(p-curS.cr);if(freeS<CHUNK){curS.cr=atomic_load_explicit(&curS.r,memory_order_acquire);freeS=RF-(p-curS.cr);}}
   else {p=atomic_load_explicit(&cur1.w,memory_order_relaxed);freeS=RF-(p-cur1.cr);if(freeS<CHUNK){cur1.cr=atomic_load_explicit(&cur1.r,memory_order_acquire);freeS=RF-(p-cur1.cr);}}
   if(freeS>=CHUNK)break; relax();}
  long s=p&(RF-1);
  for(int c=0;c<CH;c++)memcpy(chan[c]+s,src[c],CHUNK*4);
  if(PF){long n2=(s+CHUNK)&(RF-1); for(int c=0;c<CH;c++)for(int o=0;o<CHUNK*4;o+=64)__builtin_prefetch((char*)(chan[c]+n2)+o,1,3);}
  if(VARIANT==4)atomic_store_explicit(&curS.w,p+CHUNK,memory_order_release);else if(VARIANT>=2)atomic_store_explicit(&cur1.w,p+CHUNK,memory_order_release);else atomic_store_explicit(&cur.w,p+CHUNK,memory_order_release);
 }return 0;}
static void *cons(void*a){pin(1);while(!atomic_load(&go));long n=TOTAL/CHUNK;
 if(VARIANT==9){for(long i=0;i<n;i++){while(jack_ringbuffer_read_space(jr)<(size_t)CHUNK*8)relax();jack_ringbuffer_read(jr,jdst,CHUNK*8);}return 0;}
 for(long i=0;i<n;i++){
  long p, fil;
  for(;;){
   if(VARIANT==0){p=atomic_load_explicit(&cur.r,memory_order_relaxed);fil=cur.cw-p;if(fil<CHUNK){cur.cw=atomic_load_explicit(&cur.w,memory_order_acquire);fil=cur.cw-p;}}
   else if(VARIANT==1){p=atomic_load_explicit(&cur.r,memory_order_relaxed);fil=atomic_load_explicit(&cur.w,memory_order_acquire)-p;}
   else if(VARIANT==2){p=atomic_load_explicit(&cur1.r,memory_order_relaxed);fil=atomic_load_explicit(&cur1.w,memory_order_acquire)-p;}
   else if(VARIANT==4){p=atomic_load_explicit(&curS.r,memory_order_relaxed);fil=curS.cw-p;if(fil<CHUNK){curS.cw=atomic_load_explicit(&curS.w,memory_order_acquire);fil=curS.cw-p;}}
   else {p=atomic_load_explicit(&cur1.r,memory_order_relaxed);fil=cur1.cw-p;if(fil<CHUNK){cur1.cw=atomic_load_explicit(&cur1.w,memory_order_acquire);fil=cur1.cw-p;}}
   if(fil>=CHUNK)break; relax();}
  long s=p&(RF-1);
  for(int c=0;c<CH;c++)memcpy(dst[c],chan[c]+s,CHUNK*4);
  if(VARIANT==4)atomic_store_explicit(&curS.r,p+CHUNK,memory_order_release);else if(VARIANT>=2)atomic_store_explicit(&cur1.r,p+CHUNK,memory_order_release);else atomic_store_explicit(&cur.r,p+CHUNK,memory_order_release);
 }return 0;}
static double run(int v){VARIANT=v;memset(&cur,0,sizeof cur);memset(&cur1,0,sizeof cur1);memset(&curS,0,sizeof curS);jack_ringbuffer_reset(jr);atomic_store(&go,0);
 pthread_t a,b;pthread_create(&a,0,prod,0);pthread_create(&b,0,cons,0);struct timespec ts={0,2000000};nanosleep(&ts,0);double t0=now();atomic_store(&go,1);pthread_join(a,0);pthread_join(b,0);double t=now()-t0;return TOTAL/CHUNK*CHUNK*8.0/t/1e9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){if(argc>1)CHUNK=atoi(argv[1]);if(argc>3)PF=atoi(argv[3]);if(argc>4)NP=atoi(argv[4]);int trials=argc>2?atoi(argv[2]):21;
 for(int c=0;c<CH;c++){chan[c]=aligned_alloc(64,RF*4);memset(chan[c],0,RF*4);src[c]=aligned_alloc(64,4096*4);dst[c]=aligned_alloc(64,4096*4);memset(src[c],1,4096*4);}
 jr=jack_ringbuffer_create(RF*8);jsrc=aligned_alloc(64,4096*8);jdst=aligned_alloc(64,4096*8);memset(jsrc,1,4096*8);
 int vs[]={0,1,2,3,4,9};const char*names[]={"sonora(cached,2 lines)","nocache,2 lines","nocache,1 line","cached,1 line","swift layout (cache +64)","jack"};
 double res[6][101];
 for(int t=0;t<trials;t++)for(int k=0;k<6;k++){int j=(k+t)%6;res[j][t]=run(vs[j]);}
 for(int k=0;k<6;k++){qsort(res[k],trials,sizeof(double),cmp);printf("%-24s median %.2f GB/s  (min %.2f max %.2f)\n",names[k],res[k][trials/2],res[k][0],res[k][trials-1]);}
}
