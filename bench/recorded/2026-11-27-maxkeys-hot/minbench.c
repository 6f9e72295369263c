/* SPDX-License-Identifier: BSD-2-Clause */
/* Built as: cc -O2 -std=gnu11 -Iinclude -o minbench minbench.c -Lbuild/dev/lib/.libs -lthrottlekit
 * and run with LD_LIBRARY_PATH naming the library to measure. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>
#include <throttlekit.h>
#define BATCH 256
#define NB 6000
static uint64_t mono(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return (uint64_t)t.tv_sec*1000000000u+t.tv_nsec;}
static _Atomic uint64_t word;
static volatile uint64_t sink;
static void floor_batch(const char *key, size_t len){
  for(int i=0;i<BATCH;i++){struct timespec ts;clock_gettime(CLOCK_REALTIME,&ts);uint64_t now=(uint64_t)ts.tv_sec*1000000000u+ts.tv_nsec;
    uint64_t h=0xcbf29ce484222325ULL; for(size_t j=0;j<len;j++){h^=(unsigned char)key[j];h*=0x100000001b3ULL;} sink=h;
    uint64_t old=atomic_load_explicit(&word,memory_order_relaxed),next; do next=(old>now?old:now)+1; while(!atomic_compare_exchange_weak(&word,&old,next));}
}
static void tk_batch(struct tk_limiter *l, const char *key, size_t len){struct tk_decision d;for(int i=0;i<BATCH;i++){if(tk_limiter_check(l,key,len,1,&d)||!d.allowed){fprintf(stderr,"bad\n");exit(1);}}}
static int cmp(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return x<y?-1:x>y;}
int main(void){
  struct tk_options o=TK_OPTIONS_INIT; struct tk_store *zs,*ms; struct tk_limiter *zl,*ml; char spec[64];
  snprintf(spec,sizeof spec,"shm:hotmin-%d",(int)getpid());
  o.zone_capacity=65536; if(tk_store_open(&zs,spec,&o)){fprintf(stderr,"zone\n");return 1;}
  struct tk_options m=TK_OPTIONS_INIT; if(tk_store_open(&ms,"memory",&m))return 1;
  struct tk_options lo=TK_OPTIONS_INIT; lo.store=zs; if(tk_limiter_open(&zl,"gcra:1000000000/1s",NULL,&lo))return 1;
  lo.store=ms; if(tk_limiter_open(&ml,"gcra:1000000000/1s",NULL,&lo))return 1;
  const char *key="user-00012345"; size_t len=strlen(key);
  static double r[3][NB];
  for(int w=0;w<200;w++){floor_batch(key,len);tk_batch(zl,key,len);tk_batch(ml,key,len);}
  for(int b=0;b<NB;b++){uint64_t t0=mono();floor_batch(key,len);uint64_t t1=mono();tk_batch(zl,key,len);uint64_t t2=mono();tk_batch(ml,key,len);uint64_t t3=mono();
    r[0][b]=(double)(t1-t0)/BATCH;r[1][b]=(double)(t2-t1)/BATCH;r[2][b]=(double)(t3-t2)/BATCH;}
  const char *nm[3]={"floor","zone-allow","mem-allow"};
  double p10[3];
  for(int c=0;c<3;c++){qsort(r[c],NB,sizeof(double),cmp);p10[c]=r[c][NB/10];printf("%s min %.1f p10 %.1f p50 %.1f\n",nm[c],r[c][0],r[c][NB/10],r[c][NB/2]);}
  printf("ratio-p10 zone %.3f mem %.3f\n",p10[1]/p10[0],p10[2]/p10[0]);
  tk_limiter_close(zl);tk_limiter_close(ml);tk_store_close(zs);tk_store_close(ms);
  tk_zone_destroy(spec+4);
  return 0;}
