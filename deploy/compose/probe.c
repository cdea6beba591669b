/* passkey-probe: the compose stack's health checks and start waits, for images that hold nothing but their own
 * executable and the C library (FROM scratch). Built by deploy/compose/build-image and shared with every container
 * of compose.yaml through the volume the setup service fills.
 *
 *   passkey-probe http HOST:PORT PATH        exit 0 when GET PATH answers 200 within 3 s
 *   passkey-probe tcp HOST:PORT              exit 0 when a TCP connection opens within 3 s
 *   passkey-probe wait SECONDS HOST:PORT -- PROGRAM [ARGUMENT...]
 *                                            waits (up to SECONDS) until HOST:PORT accepts a connection, then
 *                                            becomes PROGRAM (exec); exit 1 when it never does
 */
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int connect_to(const char *address) {
    char host[256];
    const char *colon = strrchr(address, ':');
    if (!colon || (size_t)(colon - address) >= sizeof host) return -1;
    memcpy(host, address, colon - address);
    host[colon - address] = 0;
    struct addrinfo hints = {0}, *found = NULL;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, colon + 1, &hints, &found) != 0) return -1;
    int fd = -1;
    for (struct addrinfo *each = found; each; each = each->ai_next) {
        fd = socket(each->ai_family, each->ai_socktype, each->ai_protocol);
        if (fd < 0) continue;
        struct timeval timeout = {3, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        if (connect(fd, each->ai_addr, each->ai_addrlen) == 0) break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(found);
    return fd;
}

static int http_ok(const char *address, const char *path) {
    int fd = connect_to(address);
    if (fd < 0) return 0;
    char request[1024];
    int length = snprintf(request, sizeof request, "GET %s HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n", path);
    if (length <= 0 || (size_t)length >= sizeof request || write(fd, request, length) != length) { close(fd); return 0; }
    char reply[64] = {0};
    size_t got = 0;
    while (got < sizeof reply - 1) {
        ssize_t n = read(fd, reply + got, sizeof reply - 1 - got);
        if (n <= 0) break;
        got += n;
    }
    close(fd);
    /* "HTTP/1.x 200 " */
    return got >= 12 && strncmp(reply, "HTTP/1.", 7) == 0 && strncmp(reply + 8, " 200", 4) == 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "http") == 0) return http_ok(argv[2], argv[3]) ? 0 : 1;
    if (argc == 3 && strcmp(argv[1], "tcp") == 0) {
        int fd = connect_to(argv[2]);
        if (fd < 0) return 1;
        close(fd);
        return 0;
    }
    if (argc >= 6 && strcmp(argv[1], "wait") == 0 && strcmp(argv[4], "--") == 0) {
        time_t deadline = time(NULL) + atoi(argv[2]);
        for (;;) {
            int fd = connect_to(argv[3]);
            if (fd >= 0) { close(fd); break; }
            if (time(NULL) >= deadline) {
                fprintf(stderr, "passkey-probe: %s did not accept a connection within %s s\n", argv[3], argv[2]);
                return 1;
            }
            poll(NULL, 0, 500);
        }
        execv(argv[5], argv + 5);
        perror(argv[5]);
        return 127;
    }
    fprintf(stderr, "usage: passkey-probe http HOST:PORT PATH | tcp HOST:PORT | wait SECONDS HOST:PORT -- PROGRAM [ARGUMENT...]\n");
    return 2;
}
