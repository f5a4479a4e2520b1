# slow_post.py PORT [CA-FILE]: a client too slow for mq-admin serve's --request-timeout. It
# POSTs the head of a 100-byte request to 127.0.0.1:PORT (over TLS, checked against CA-FILE,
# when one is given), then sends the body a byte every 1.5 s (8 at most), and prints the first
# line of whatever answer came back, or "no answer".
import socket
import ssl
import sys

s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
if len(sys.argv) > 2:
    ctx = ssl.create_default_context(cafile=sys.argv[2])
    s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
s.sendall(b"POST /msmq/private$/simpleq HTTP/1.1\r\nHost: x\r\n"
          b"Content-Type: multipart/related; boundary=\"b\"\r\nContent-Length: 100\r\n\r\n")
answer = b""
s.settimeout(1.5)
for i in range(8):
    try:
        s.sendall(b"x")
        got = s.recv(4096)
        if not got:
            break
        answer += got
    except socket.timeout:
        pass
    except OSError:
        break
print(answer.split(b"\r\n")[0].decode() if answer else "no answer")
