/*
 * forklock.c -- the fork lock (see forklock.h): one default mutex.
 */
#include "forklock.h"

#include <pthread.h>

static pthread_mutex_t g_fork_mutex = PTHREAD_MUTEX_INITIALIZER;

void ha_fork_lock(void)
{
	/* A default mutex only fails on misuse; there is nothing to do then. */
	(void)pthread_mutex_lock(&g_fork_mutex);
}

void ha_fork_unlock(void)
{
	(void)pthread_mutex_unlock(&g_fork_mutex);
}

int ha_fork_lock_reinit(void)
{
	return pthread_mutex_init(&g_fork_mutex, NULL);
}
