#ifndef CNETWORKIO_H
#define CNETWORKIO_H
/* Linux system interfaces that Swift's Glibc module does not export (epoll, eventfd, accept4). */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

/* accept4(2), which glibc declares only under _GNU_SOURCE. */
int cnetworkio_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
#endif
