/*
 * heap_template.h: the engine's one binary heap, instantiated per element
 * type (as PostgreSQL's lib/sort_template.h is). The heap is an array the
 * caller owns and sizes; the element on top is the one every other is not
 * above. Define, then include:
 *
 *   #define HEAP_PREFIX  name     functions name_push, name_pop, name_replace_top
 *   #define HEAP_ELEM    type     the element type (copied by value)
 *   #define HEAP_ABOVE(a, b)      nonzero when element a belongs above b
 *                                 (a strict order: ties break the same way
 *                                 every time, so results are reproducible)
 *   #include "heap_template.h"
 *
 * The macros are undefined at the end, so one file may include it several
 * times. The graph searches, the posting scorer, the ground truth, the
 * paged builder and scanner and the device model's server queue all use it.
 */
#include <stddef.h>

#ifndef HEAP_PREFIX
#error "heap_template.h: define HEAP_PREFIX"
#endif
#ifndef HEAP_ELEM
#error "heap_template.h: define HEAP_ELEM"
#endif
#ifndef HEAP_ABOVE
#error "heap_template.h: define HEAP_ABOVE"
#endif

#define HEAP_CAT2(a, b) a##_##b
#define HEAP_CAT(a, b) HEAP_CAT2(a, b)
#define HEAP_FN(name) HEAP_CAT(HEAP_PREFIX, name)

/* Sift v down from slot i of a heap of n elements whose slot i is a hole. */
static inline void HEAP_FN(sift_down)(HEAP_ELEM *a, size_t n, size_t i, HEAP_ELEM v)
{
	for (;;) {
		size_t l = 2 * i + 1, b;

		if (l >= n)
			break;
		b = l + 1 < n && (HEAP_ABOVE(a[l + 1], a[l])) ? l + 1 : l;
		if (!(HEAP_ABOVE(a[b], v)))
			break;
		a[i] = a[b];
		i = b;
	}
	a[i] = v;
}

/* Add v to a heap of *n elements; the array has room for one more. */
static inline void HEAP_FN(push)(HEAP_ELEM *a, size_t *n, HEAP_ELEM v)
{
	size_t i = (*n)++;

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!(HEAP_ABOVE(v, a[p])))
			break;
		a[i] = a[p];
		i = p;
	}
	a[i] = v;
}

/* Remove and return the top of a heap of *n > 0 elements. */
static inline HEAP_ELEM HEAP_FN(pop)(HEAP_ELEM *a, size_t *n)
{
	HEAP_ELEM top = a[0];
	size_t m = --(*n);

	if (m)
		HEAP_FN(sift_down)(a, m, 0, a[m]);
	return top;
}

/* Replace the top of a heap of n > 0 elements with v. */
static inline void HEAP_FN(replace_top)(HEAP_ELEM *a, size_t n, HEAP_ELEM v)
{
	HEAP_FN(sift_down)(a, n, 0, v);
}

#undef HEAP_FN
#undef HEAP_CAT
#undef HEAP_CAT2
#undef HEAP_PREFIX
#undef HEAP_ELEM
#undef HEAP_ABOVE
