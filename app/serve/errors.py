"""Errors as the OpenAI API writes them: ``{"error": {"message", "type", "param", "code"}}``, one
line each, never a traceback (an unexpected one goes to the log folder, as the CLI does)."""
from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

log = logging.getLogger("hexa.serve")

TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
         405: "invalid_request_error", 429: "rate_limit_error", 503: "service_unavailable"}


class ApiError(Exception):
    """A request hexa answers with ``status`` and an OpenAI-style error body."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.headers = status, message, param, code, headers


def body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": TYPES.get(status, "server_error"), "param": param,
                      "code": code}}


def response(exc: ApiError) -> JSONResponse:
    return JSONResponse(body(exc.status, exc.message, exc.param, exc.code), status_code=exc.status,
                        headers=exc.headers)


def install(app: FastAPI, on_internal) -> None:
    """Every error path of ``app`` answers JSON: ours, Starlette's (404, 405) and unexpected ones
    (``on_internal(exc)`` returns the one line to send, having logged the traceback)."""

    @app.exception_handler(ApiError)
    async def _api(_: Request, exc: ApiError):
        return response(exc)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException):
        message = {404: "no such endpoint (see /v1/models, /v1/chat/completions, /v1/completions)",
                   405: "method not allowed"}.get(exc.status_code, str(exc.detail))
        return JSONResponse(body(exc.status_code, message), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception):
        return JSONResponse(body(500, on_internal(exc)), status_code=500)
