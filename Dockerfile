# Sundown's container image: the wheel and its hashed lock in a virtualenv on a slim Python, run unprivileged.
# Build: docker build -t sundown .   (or podman build). CI builds and runs it (tests/project/test_container_image.py)
# on a base made from Debian's packages, passed as --build-arg BASE=...; any image with python3 and its venv
# module will do. .dockerignore keeps the tree's secrets, databases and virtualenvs out of the build.
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
WORKDIR /src
COPY . .
RUN python3 -m venv /opt/build \
 && /opt/build/bin/pip wheel --no-cache-dir --no-deps -w /wheels .

FROM ${BASE}
ENV PATH=/opt/sundown/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    SUNDOWN_DATABASE_URL=sqlite:////data/sundown.db SUNDOWN_LOG_FORMAT=json
RUN useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin sundown \
 && mkdir /data && chown sundown:sundown /data && chmod 0700 /data
# The dependencies first, from the lock only, each checked against its hash: this layer is reused until the lock changes.
COPY requirements.lock /tmp/requirements.lock
RUN python3 -m venv /opt/sundown \
 && /opt/sundown/bin/pip install --no-cache-dir --require-hashes -r /tmp/requirements.lock \
 && rm /tmp/requirements.lock
COPY --from=build /wheels /wheels
RUN /opt/sundown/bin/pip install --no-cache-dir --no-deps /wheels/*.whl && rm -rf /wheels
COPY --chmod=0755 docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
USER sundown
WORKDIR /data
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s CMD ["sundown", "health", "--url", "http://127.0.0.1:8000"]
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["sundown", "serve", "--bind", "0.0.0.0:8000"]
