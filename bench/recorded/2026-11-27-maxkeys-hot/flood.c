/* SPDX-License-Identifier: BSD-2-Clause */
/* Built as: cc -O2 -std=gnu11 -Iinclude -o flood flood.c -Lbuild/dev/lib/.libs -lthrottlekit
 * and run with LD_LIBRARY_PATH naming the library to measure. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <throttlekit.h>
#define BATCH 1000
static uint64_t mono(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return (uint64_t)t.tv_sec*1000000000u+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  uint64_t maxk=argc>1?strtoull(argv[1],0,10):100000; int nb=argc>2?atoi(argv[2]):1000;
  struct tk_options o=TK_OPTIONS_INIT; struct tk_store *s; struct tk_limiter *l; struct tk_decision d; char key[32]; struct tk_stats st;
  o.max_keys=maxk; o.flags=TK_OPT_NO_RECLAIMER; if(tk_store_open(&s,"memory",&o))return 1;
  struct tk_options lo=TK_OPTIONS_INIT; lo.store=s; if(tk_limiter_open(&l,"gcra:10/1h",NULL,&lo))return 1;
  uint64_t i=0; for(;i<3*maxk;i++){snprintf(key,sizeof key,"k%llu",(unsigned long long)i);tk_limiter_check(l,key,strlen(key),1,&d);}
  double *r=malloc(sizeof(double)*nb);
  for(int b=0;b<nb;b++){uint64_t t0=mono();for(int j=0;j<BATCH;j++,i++){snprintf(key,sizeof key,"k%llu",(unsigned long long)i);tk_limiter_check(l,key,strlen(key),1,&d);} r[b]=(double)(mono()-t0)/BATCH;}
  qsort(r,nb,sizeof(double),cmp);
  tk_store_stats(s,&st,sizeof st);
  printf("max_keys %llu: new key min %.0f p10 %.0f p50 %.0f ns; keys %llu evictions %llu capacity %llu reserved %llu B\n",(unsigned long long)maxk,r[0],r[nb/10],r[nb/2],(unsigned long long)st.keys,(unsigned long long)st.evictions,(unsigned long long)st.capacity,(unsigned long long)st.reserved);
  return 0;}
