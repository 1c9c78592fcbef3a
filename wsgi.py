from app import create_app
from app.cli import checked

app = checked(create_app)  # a missing or wrong setting: its one line, for gunicorn and `flask --app wsgi` alike
