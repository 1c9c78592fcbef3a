# Sundown's container image: the wheel on a slim Python, run as an unprivileged user.
# Build: docker build -t sundown .   (CI parses this file but does not build the image.)
FROM python:3.11-slim AS build
WORKDIR /src
COPY . .
RUN pip install --no-cache-dir --require-hashes -r requirements.lock \
 && pip wheel --no-deps -w /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    SUNDOWN_DATABASE_URL=sqlite:////data/sundown.db SUNDOWN_LOG_FORMAT=json
RUN useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin sundown \
 && mkdir /data && chown sundown:sundown /data
COPY requirements.lock /tmp/requirements.lock
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --require-hashes -r /tmp/requirements.lock \
 && pip install --no-cache-dir --no-deps /wheels/*.whl && rm -rf /wheels /tmp/requirements.lock
COPY --chmod=0755 docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
USER sundown
WORKDIR /data
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s CMD ["sundown", "health", "--url", "http://127.0.0.1:8000"]
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["sundown", "serve", "--bind", "0.0.0.0:8000"]
