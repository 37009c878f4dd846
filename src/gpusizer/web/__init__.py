"""``gpusizer serve``: the command line's answers over HTTP, and a web page that asks them.

``gpusizer.web.app`` (FastAPI, the optional extra ``gpusizer[serve]``) serves ``gpusizer.web.questions``
(pydantic request bodies, each the command line it stands for) and the static page in ``static/``.
Nothing here is imported by ``import gpusizer``.
"""
